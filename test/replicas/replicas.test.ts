/** The replica suite (replica-suite.ts) with every replica on one SQLite file: replicas on one host. */
import { replicaSuite } from './replica-suite.js';

replicaSuite('one SQLite file', async () => ({
  dbPath: (dir) => `${dir}/shared.db`,
  close: async () => undefined,
}));
