/**
 * What an outsider could do to the HTTP surface (issue 31), reproduced against a real gateway:
 * - a sign-in `next` holding CR LF put the attacker's `Set-Cookie` on the 303 (a victim signing in with
 *   their own password ended up in the attacker's account);
 * - `/dashboard/account` sent `X-Frame-Options: DENY, DENY` (each security header twice, read as invalid);
 * - `/readyz` listed every project, endpoint and upstream server URL with its last failure, to anyone;
 * - `/__test/clock` and `/__test/webhook-events` answered anyone once a config turned them on;
 * - `security.allowed_targets: [::/0]` was accepted without a word.
 * This gateway has the testing flags set but not SWITCHBOARD_TESTING=1, and a scrape token.
 */
import { describe, expect, it } from 'vitest';
import { makeKeys, PROJECT, SCRAPE_TOKEN_SERVER, testConfig } from '../helpers/configs.js';
import { createDashboardUser, signIn } from '../helpers/dashboard-session.js';
import { call, expectError } from '../helpers/http.js';
import { startGatewayProcess, startSimulatorProcess, TEST_SCRAPE_TOKEN } from '../helpers/processes.js';
import { openRaw, readResponse, requestHead } from '../helpers/raw-http.js';
import { useProcesses } from '../helpers/suite.js';

const suite = useProcesses(async () => {
  const keys = makeKeys();
  const sim = await startSimulatorProcess();
  const config = {
    ...testConfig(sim.url, keys, { server: SCRAPE_TOKEN_SERVER, testing: { event_injection: true } }),
    security: { allowed_targets: ['10.0.0.0/8', '::/0'] },
  };
  const gw = await startGatewayProcess(config, { env: { SWITCHBOARD_TESTING: '' } });
  // One user for every test here: each `users create` is a CLI process and a scrypt hash.
  const user = await createDashboardUser(gw.dbPath);
  return { sim, gw, keys, user };
});

/** One request over a raw socket: the head as sent (every header line, repeats kept) and the parsed answer. */
async function raw(method: string, path: string, headers: Record<string, string>, body = ''): Promise<{ status: number; lines: string[] }> {
  const exchange = await openRaw(suite.gw.url);
  await exchange.write(requestHead(method, path, body ? { ...headers, 'content-length': String(Buffer.byteLength(body)) } : headers) + body);
  const res = await readResponse(exchange);
  exchange.socket.destroy();
  const bytes = exchange.received().toString('latin1');
  return { status: res.status, lines: bytes.slice(0, bytes.indexOf('\r\n\r\n')).split('\r\n').slice(1) };
}

const named = (lines: string[], name: string): string[] => lines.filter((l) => l.toLowerCase().startsWith(`${name.toLowerCase()}:`));

describe('a sign-in next holding CR LF', () => {
  it('signs the submitter in, to the dashboard home, with no header of the attacker\'s', async () => {
    const { user } = suite;
    const form = new URLSearchParams({ email: user.email, password: user.password, next: '/dashboard/\r\nSet-Cookie: switchboard_session=ATTACKER; Path=/' }).toString();
    const res = await raw('POST', '/dashboard/login', { 'content-type': 'application/x-www-form-urlencoded' }, form);
    expect(res.status).toBe(303);
    expect(named(res.lines, 'location')).toEqual(['Location: /dashboard/projects']);
    const cookies = named(res.lines, 'set-cookie');
    expect(cookies).toHaveLength(1);
    expect(cookies[0]).toMatch(/^Set-Cookie: switchboard_session=(?!ATTACKER)[A-Za-z0-9_-]+;/);
    expect(res.lines.join('\n')).not.toContain('ATTACKER');
  });

  it('is dropped from the sign-in page and its provider links', async () => {
    const res = await call(`${suite.gw.url}/dashboard/login?next=${encodeURIComponent('/dashboard/\r\nX-Evil: 1')}`);
    expect(res.status).toBe(200);
    expect(String(res.body)).toContain('name="next" value=""');
  });
});

describe('dashboard security headers', () => {
  const SECURITY = ['content-security-policy', 'x-frame-options', 'referrer-policy', 'x-content-type-options'];

  it('go out exactly once each on the account page, the sign-in page and a sign-in refusal', async () => {
    const session = await signIn(suite.gw.url, suite.user);
    const pages = [
      await raw('GET', '/dashboard/account', { cookie: session.cookie }),
      await raw('GET', '/dashboard/login', {}),
      await raw('POST', '/dashboard/login', { 'content-type': 'application/x-www-form-urlencoded' }, 'email=x%40example.test&password=wrong'),
    ];
    expect(pages.map((p) => p.status)).toEqual([200, 200, 401]);
    for (const page of pages) {
      for (const name of SECURITY) expect(named(page.lines, name), `${name} in\n${page.lines.join('\n')}`).toHaveLength(1);
      expect(named(page.lines, 'x-frame-options')).toEqual(['X-Frame-Options: DENY']);
      expect(named(page.lines, 'x-content-type-options')).toEqual(['X-Content-Type-Options: nosniff']);
    }
  });
});

describe('/readyz', () => {
  it('tells anyone the status and its checks only; the upstream servers and dependencies need the scrape token', async () => {
    const open = await call(`${suite.gw.url}/readyz`);
    expect(open.status).toBe(200);
    expect(open.body).toEqual({ status: 'ready', checks: { store: true, pool: true } });
    const wrong = await call(`${suite.gw.url}/readyz`, { key: 'not-the-token' });
    expect(wrong.body).toEqual(open.body);
    const detailed = await call(`${suite.gw.url}/readyz`, { key: TEST_SCRAPE_TOKEN });
    expect(detailed.status).toBe(200);
    const body = detailed.body as { status: string; upstreams: { servers: { url: string }[] }[] };
    expect(body.status).toBe('ready');
    expect(body.upstreams.flatMap((u) => u.servers.map((s) => s.url))).toContain(suite.sim.url);
    expect(JSON.stringify(open.body)).not.toContain(suite.sim.url);
  });
});

describe('security.allowed_targets', () => {
  it('warns at start of an entry that admits every address', () => {
    const lines = suite.gw.stdout.join('').split('\n').filter((l) => l.includes('security.allowed_targets['));
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/"level":40,.*security\.allowed_targets\[1\] \\"::\/0\\" admits every IPv6 address/);
  });
});

describe('test hooks without SWITCHBOARD_TESTING=1', () => {
  it('do not exist, although the config turns them on, and the start-up log says why', async () => {
    expectError(await call(`${suite.gw.url}/__test/clock`, { body: { advance_ms: 1000 } }), 404, 'not_found');
    expectError(await call(`${suite.gw.url}/__test/webhook-events`, { body: { project: PROJECT, type: 'webhook.test' } }), 404, 'not_found');
    const log = suite.gw.stdout.join('');
    expect(log).toContain('SWITCHBOARD_TESTING=1 is not: the test hooks (/__test/...) are off');
    expect(log).not.toContain('testing.controllable_clock is on');
  });
});
