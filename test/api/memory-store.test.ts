import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { makeKeys, testConfig } from '../helpers/configs.js';
import { call } from '../helpers/http.js';
import { startGatewayProcess, startSimulatorProcess } from '../helpers/processes.js';
import { makeRouterKeys, ROUTER_PROJECT, routerProject } from '../helpers/router-config.js';
import { useProcesses } from '../helpers/suite.js';

const suite = useProcesses(async () => {
  const keys = makeRouterKeys();
  const sim = await startSimulatorProcess();
  const gw = await startGatewayProcess(testConfig(sim.url, makeKeys(), { extraProjects: [routerProject(sim.url, keys)] }), { dbPath: ':memory:' });
  return { sim, gw, keys };
});

function storeFile(): string {
  const match = /"db":"([^"]+)"/.exec(suite.gw.stdout.join(''));
  if (!match?.[1]) throw new Error('the gateway did not log its store');
  return match[1];
}

// Regression: with storage ":memory:" every writer thread opened its own empty in-memory database, so
// rows written off the event loop (usage, routing decisions) never reached the store the routes read.
describe('storage.path ":memory:"', () => {
  it('shares one store between the event loop and the writer threads', async () => {
    const base = `${suite.gw.url}/${ROUTER_PROJECT}`;
    const routed = await call(`${base}/_semantic/router/v1/chat/completions`, {
      key: suite.keys.full,
      body: { model: 'm', messages: [{ role: 'user', content: 'compute the derivative of sin x' }] },
    });
    expect(routed.status).toBe(200);
    const decisions = await call(`${base}/v1/management/semantic-router/decisions`, { key: suite.keys.full });
    const ids = (decisions.body as { data: { decision_request_id: string }[] }).data.map((d) => d.decision_request_id);
    expect(ids).toContain(routed.headers.get('x-request-id'));
  });

  it('leaves nothing behind once the gateway stops', async () => {
    const file = storeFile();
    expect(existsSync(file)).toBe(true);
    expect(await suite.gw.stop()).toBe(0);
    expect(existsSync(file)).toBe(false);
  });
});
