/**
 * One port, one gateway. Regression: uWS listens with SO_REUSEPORT by default, so a second `serve` on the
 * same port started silently and the kernel split the traffic between two processes, each with its own
 * limiter (a project limited to 3 requests a minute admitted 5 in a second), both writing one store.
 */
import { describe, expect, it } from 'vitest';
import { testConfig } from '../helpers/configs.js';
import { freePort, runCli, startGatewayProcess, tempDir, writeConfig } from '../helpers/processes.js';
import { useSimulator } from '../helpers/suite.js';

const suite = useSimulator();

// The first gateway must bind the port by number: a port 0 bind is never shared.
describe('a second gateway on a port already served', () => {
  it('fails with "address in use" and exit code 1, and the first keeps serving', async () => {
    const port = String(await freePort());
    const first = await startGatewayProcess(testConfig(suite.sim.url, suite.keys), { extraArgs: ['--port', port] });
    try {
      expect(new URL(first.url).port).toBe(port);
      const dir = tempDir();
      const second = await runCli(['serve', '--config', writeConfig(dir, testConfig(suite.sim.url, suite.keys)), '--port', port, '--db', `${dir}/second.db`]);
      expect(second.code).toBe(1);
      expect(second.stderr).toMatch(/address in use/);
      expect((await fetch(`${first.url}/healthz`)).status).toBe(200);
    } finally {
      await first.stop();
    }
  });
});
