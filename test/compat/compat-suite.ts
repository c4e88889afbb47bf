/**
 * The processes the compatibility run shares: a simulator and two gateways on it. The main
 * gateway has the standard test config plus the semantic router's project (test/helpers/router-config.ts),
 * so a client can use a direct endpoint base URL and a routed one. The throttled gateway's test project
 * has the tiniest request rate a paid project can have (README "Rate limits": the ceiling is at least
 * 10), so a 429 is reached in a few cheap requests without throttling every other case (every client
 * library meets the same spent window).
 */
import { afterAll, beforeAll } from 'vitest';
import { makeKeys, PROJECT, testConfig, type TestKeys } from '../helpers/configs.js';
import { startGatewayProcess, startSimulatorProcess, type GatewayProcess, type SimulatorProcess } from '../helpers/processes.js';
import { makeRouterKeys, ROUTER_PROJECT, routerProject, type RouterKeys } from '../helpers/router-config.js';

export interface CompatSuite {
  readonly sim: SimulatorProcess;
  readonly gw: GatewayProcess;
  readonly throttled: GatewayProcess;
  readonly keys: TestKeys;
  readonly throttledKeys: TestKeys;
  readonly routerKeys: RouterKeys;
  /** `/{project}/chat/v1` on the main gateway. */
  readonly chatBase: string;
  /** `/{project}/embed/v1` on the main gateway. */
  readonly embedBase: string;
  /** `/{router project}/_semantic/router/v1` on the main gateway. */
  readonly routedBase: string;
}

/**
 * Starts the processes in beforeAll and stops whatever did start in afterAll, even when a later start
 * failed. The returned object reads through to the running suite, so use it inside tests and hooks.
 */
export function useCompatSuite(): CompatSuite {
  let sim: SimulatorProcess | null = null;
  let gw: GatewayProcess | null = null;
  let throttled: GatewayProcess | null = null;
  let suite: CompatSuite | null = null;
  beforeAll(async () => {
    sim = await startSimulatorProcess();
    const keys = makeKeys();
    const throttledKeys = makeKeys();
    const routerKeys = makeRouterKeys();
    // allSettled, not all: a gateway that starts after its sibling failed must still be stopped.
    const started = await Promise.allSettled([
      startGatewayProcess(testConfig(sim.url, keys, { extraProjects: [routerProject(sim.url, routerKeys)] })),
      startGatewayProcess(testConfig(sim.url, throttledKeys, { rateLimit: { requests_per_minute: 1 } })),
    ]);
    const [main, slow] = started.map((s) => (s.status === 'fulfilled' ? s.value : null));
    gw = main ?? null;
    throttled = slow ?? null;
    const failed = started.find((s) => s.status === 'rejected');
    if (failed || !main || !slow) throw failed?.reason ?? new Error('a gateway did not start');
    suite = {
      sim,
      gw: main,
      throttled: slow,
      keys,
      throttledKeys,
      routerKeys,
      chatBase: `${main.url}/${PROJECT}/chat/v1`,
      embedBase: `${main.url}/${PROJECT}/embed/v1`,
      routedBase: `${main.url}/${ROUTER_PROJECT}/_semantic/router/v1`,
    };
  });
  afterAll(async () => {
    // A process that died mid-run fails every later case with ECONNREFUSED; say which one and why.
    const died = [gw, throttled, sim].find((p) => p !== null && (p.proc.exitCode !== null || p.proc.signalCode !== null));
    await Promise.all([gw?.stop(), throttled?.stop()]);
    await sim?.stop();
    if (died) throw new Error(`a suite process exited early:\n${died.stdout.join('').slice(-2000)}\n${died.stderr.join('').slice(-2000)}`);
  });
  return new Proxy({} as CompatSuite, {
    get(_target, field) {
      if (!suite) throw new Error('the compat suite has not started: read it inside a test or hook');
      return Reflect.get(suite, field);
    },
  });
}
