/**
 * The usual API suite: a simulator and a gateway on a fresh store, started once per file and stopped
 * after it. Fields are read after `beforeAll` has run (inside tests), never at module load.
 */
import { afterAll, beforeAll } from 'vitest';
import { makeKeys, testConfig, type TestKeys } from './configs.js';
import { startGatewayProcess, startSimulatorProcess, type GatewayProcess, type SimulatorProcess } from './processes.js';

export interface GatewaySuite {
  readonly sim: SimulatorProcess;
  readonly gw: GatewayProcess;
  readonly keys: TestKeys;
}

export function useGatewaySuite(overrides: Parameters<typeof testConfig>[2] = {}): GatewaySuite {
  let state: GatewaySuite | null = null;
  beforeAll(async () => {
    const keys = makeKeys();
    const sim = await startSimulatorProcess();
    const gw = await startGatewayProcess(testConfig(sim.url, keys, overrides));
    state = { sim, gw, keys };
  });
  afterAll(async () => {
    await state?.gw.stop();
    await state?.sim.stop();
  });
  const get = (): GatewaySuite => {
    if (!state) throw new Error('the suite has not started: read it inside a test or hook');
    return state;
  };
  return {
    get sim() {
      return get().sim;
    },
    get gw() {
      return get().gw;
    },
    get keys() {
      return get().keys;
    },
  };
}
