/** `switchboard config check FILE`: validation like serve, then one line per upstream server. */
import { describe, expect, it } from 'vitest';
import { makeKeys, testConfig } from '../helpers/configs.js';
import { runCli, tempDir, writeConfig } from '../helpers/processes.js';
import { useSimulator } from '../helpers/suite.js';

const POOL_ID = 'f1000000-0000-4000-8000-000000000001';

describe('switchboard config check', () => {
  const s = useSimulator();

  /** The test config cut to one project with one endpoint, whose upstream is `upstream`. */
  function configWith(upstream: Record<string, unknown>): unknown {
    const config = testConfig(s.sim.url, makeKeys());
    const project = config.projects[0] as Record<string, unknown>;
    const endpoint = { id: POOL_ID, slug: 'pool', name: 'Pool', kind: 'chat', tier: 'gpu', model: { id: 'm', context_window: 8192 }, upstream: { model: 'sim-chat', ...upstream } };
    return { ...config, projects: [{ ...project, endpoints: [endpoint], keys: [] }] };
  }

  it('prints OK for every server that answers its models route, and exits 0', async () => {
    const file = writeConfig(tempDir(), configWith({ servers: [{ base_url: s.sim.url }], api_key_env: 'SB_CHECK_KEY' }));
    const res = await runCli(['config', 'check', file], { SB_CHECK_KEY: 'secret' });
    expect(res.code).toBe(0);
    expect(res.stdout).toMatch(new RegExp(`^OK +proj_test/pool ${s.sim.url}: GET /models: HTTP 200, \\d+ ms$`, 'm'));
    expect(res.stdout).toMatch(/^1 of 1 upstream servers OK$/m);
    // --config FILE, as every other command takes the config, says the same.
    const named = await runCli(['config', 'check', '--config', file], { SB_CHECK_KEY: 'secret' });
    expect(named.code, named.stderr).toBe(0);
    expect(named.stdout).toMatch(/^1 of 1 upstream servers OK$/m);
  });

  it('prints the cause for each failing server and exits 1', async () => {
    const origin = s.sim.url.replace(/\/v1$/, '');
    const file = writeConfig(tempDir(), configWith({ servers: [{ base_url: s.sim.url }, { base_url: 'http://127.0.0.1:9/v1' }, { base_url: `${origin}/nope` }] }));
    // A long timeout: on a loaded test machine a starved CLI must not turn a refusal into a timeout.
    const res = await runCli(['config', 'check', file, '--timeout-ms', '30000']);
    expect(res.stdout.trim().split('\n')).toEqual([
      expect.stringMatching(/^OK /),
      'FAIL proj_test/pool http://127.0.0.1:9/v1: ECONNREFUSED 127.0.0.1:9',
      `FAIL proj_test/pool ${origin}/nope: HTTP 404 from ${origin}/nope/models`,
      '1 of 3 upstream servers OK',
    ]);
    expect(res.code).toBe(1);
  });

  it('fails a server whose api_key_env is not set, even when it answers without a key', async () => {
    const file = writeConfig(tempDir(), configWith({ base_url: s.sim.url, api_key_env: 'SB_CHECK_KEY_UNSET' }));
    const res = await runCli(['config', 'check', file]);
    expect(res.code).toBe(1);
    expect(res.stdout).toMatch(/^FAIL proj_test\/pool .*: api_key_env SB_CHECK_KEY_UNSET is not set \(GET \/models: HTTP 200, \d+ ms\)$/m);
  });

  it('warns first of allowed_targets that admit everything or the cloud metadata address, without failing for it', async () => {
    const config = configWith({ servers: [{ base_url: s.sim.url }] }) as Record<string, unknown>;
    const file = writeConfig(tempDir(), { ...config, security: { allowed_targets: ['10.0.0.0/8', '0.0.0.0/0', '169.254.169.254'] } });
    const res = await runCli(['config', 'check', file]);
    const lines = res.stdout.trim().split('\n');
    expect(lines.slice(0, 2)).toEqual([
      expect.stringMatching(/^WARN security\.allowed_targets\[1\] "0\.0\.0\.0\/0" admits every IPv4 address/),
      expect.stringMatching(/^WARN security\.allowed_targets\[2\] "169\.254\.169\.254" admits the cloud metadata address/),
    ]);
    expect(lines.at(-1)).toBe('1 of 1 upstream servers OK');
    expect(res.code).toBe(0);
  });

  it('exits 2 with the field path for an invalid config, like serve', async () => {
    const file = writeConfig(tempDir(), configWith({ servers: [{ base_url: 'ftp://nope' }] }));
    const res = await runCli(['config', 'check', file]);
    expect(res.code).toBe(2);
    expect(res.stderr).toContain('projects[0].endpoints[0].upstream.servers[0].base_url');
    expect(res.stdout).toBe('');
  });

  it('exits 2 on a missing file argument or an unknown config command', async () => {
    expect((await runCli(['config', 'check'])).code).toBe(2);
    const both = await runCli(['config', 'check', '--config', 'a.yaml', 'b.yaml']);
    expect(both.code).toBe(2);
    expect(both.stderr).toContain("Unexpected argument 'b.yaml'");
    const unknown = await runCli(['config', 'lint', 'x.yaml']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/unknown config command "lint"/);
  });
});
