/**
 * Processes started once per test file and stopped after it. The returned object reads through to what
 * `start` produced, so its fields are used inside tests and hooks, never at module load.
 */
import { afterAll, beforeAll } from 'vitest';
import { makeKeys, testConfig, type TestKeys } from './configs.js';
import { startGatewayProcess, startSimulatorProcess, type GatewayProcess, type SimulatorProcess } from './processes.js';

interface Running {
  readonly sim: SimulatorProcess;
  readonly gw: GatewayProcess;
}

/** The lifecycle every API suite shares: start in beforeAll, stop the gateway then the simulator. */
export function useProcesses<T extends Running>(start: () => Promise<T>): T {
  return useStarted(start, async (state) => {
    await state.gw.stop();
    await state.sim.stop();
  });
}

/** Whatever a file starts once: `start` in beforeAll, `stop` in afterAll (when it started). */
export function useStarted<T extends object>(start: () => Promise<T>, stop: (state: T) => Promise<void>): T {
  let state: T | null = null;
  beforeAll(async () => {
    state = await start();
  });
  afterAll(async () => {
    if (state) await stop(state);
  });
  return new Proxy({} as T, {
    get(_target, field) {
      if (!state) throw new Error('the suite has not started: read it inside a test or hook');
      return Reflect.get(state, field);
    },
  });
}

export interface GatewaySuite extends Running {
  readonly keys: TestKeys;
  /** The config the gateway was started with, for suites that restart it on the same store. */
  readonly config: ReturnType<typeof testConfig>;
}

/** The usual API suite: a simulator and a gateway on a fresh store with the standard test config. */
export function useGatewaySuite(overrides: Parameters<typeof testConfig>[2] = {}): GatewaySuite {
  return useProcesses(async () => {
    const keys = makeKeys();
    const sim = await startSimulatorProcess();
    const config = testConfig(sim.url, keys, overrides);
    const gw = await startGatewayProcess(config);
    return { sim, gw, keys, config };
  });
}

/** A simulator (and fresh keys) for suites that start and stop their own gateways. */
export function useSimulator(): { readonly sim: SimulatorProcess; readonly keys: TestKeys } {
  let sim: SimulatorProcess | null = null;
  const keys = makeKeys();
  beforeAll(async () => {
    sim = await startSimulatorProcess();
  });
  afterAll(async () => {
    await sim?.stop();
  });
  return {
    get sim() {
      if (!sim) throw new Error('the simulator has not started: read it inside a test or hook');
      return sim;
    },
    keys,
  };
}
