/**
 * Issue 17: a client that goes away releases the upstream connection, streaming and buffered, direct and
 * routed. The client aborts once the model server holds the request (a slow first token, or a slow
 * stream); the simulator records when the gateway closed its connection. Each case must reach the upstream
 * as an abort (the answer never completed); the delay from the client's abort to the upstream's close is
 * measured and reported (test-artifacts/client-abort.json), not asserted: timings on a shared CI machine
 * are not a test's business (the target is 100 ms).
 */
import { randomUUID } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeKeys, PROJECT, testConfig, type TestKeys } from '../helpers/configs.js';
import { startGatewayProcess, startSimulatorProcess, type GatewayProcess, type SimulatorProcess } from '../helpers/processes.js';
import { makeRouterKeys, ROUTER_PROJECT, routerProject, type RouterKeys } from '../helpers/router-config.js';
import { waitForSim } from '../helpers/simulator-log.js';

let sim: SimulatorProcess;
let gw: GatewayProcess;
let keys: TestKeys;
let routerKeys: RouterKeys;
const delays: Record<string, number> = {};

beforeAll(async () => {
  sim = await startSimulatorProcess();
  keys = makeKeys();
  routerKeys = makeRouterKeys();
  gw = await startGatewayProcess(testConfig(sim.url, keys, { extraProjects: [routerProject(sim.url, routerKeys)] }));
});

afterAll(async () => {
  mkdirSync('test-artifacts', { recursive: true });
  writeFileSync(join('test-artifacts', 'client-abort.json'), `${JSON.stringify(delays, null, 2)}\n`);
  console.log(`client abort -> upstream close, ms: ${JSON.stringify(delays)}`);
  await gw?.stop();
  await sim?.stop();
});

const cases = [
  { name: 'direct, streamed', routed: false, stream: true },
  { name: 'direct, buffered', routed: false, stream: false },
  { name: 'routed, streamed', routed: true, stream: true },
  { name: 'routed, buffered', routed: true, stream: false },
];

describe('a client abort reaches the model server', () => {
  for (const c of cases) {
    it(c.name, async () => {
      const marker = `abort-${randomUUID()}`;
      const url = c.routed ? `${gw.url}/${ROUTER_PROJECT}/_semantic/router/v1/chat/completions` : `${gw.url}/${PROJECT}/chat/v1/chat/completions`;
      // Streamed: 200 tokens 50 ms apart; buffered: the first token after 20 s. Either way the model server
      // is still answering when the client leaves.
      const sim = c.stream ? { tokens: 200, delay_ms: 50 } : { first_token_delay_ms: 20_000 };
      const controller = new AbortController();
      const res = fetch(url, {
        method: 'POST',
        headers: { authorization: `Bearer ${c.routed ? routerKeys.full : keys.full}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'model-chat', messages: [{ role: 'user', content: `compute the derivative of sin x ${marker}` }], stream: c.stream, sim }),
        signal: controller.signal,
      });
      const held = (r: { path: string; body: string }) => r.path.endsWith('/chat/completions') && r.body.includes(marker);
      if (c.stream) {
        const reader = (await res).body?.getReader();
        await reader?.read();
      } else {
        res.catch(() => undefined);
        await waitForSim(simUrl(), held);
      }
      const abortedAt = Date.now();
      controller.abort();
      const seen = await waitForSim(simUrl(), (r) => held(r) && r.aborted);
      expect(seen.completed).toBe(false);
      delays[c.name] = (seen.aborted_at_ms ?? Number.NaN) - abortedAt;
    });
  }
});

const simUrl = (): string => sim.url;
