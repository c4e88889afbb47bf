/**
 * Chat load against a gateway process that is about to be killed (the usage journal's SIGKILL tests):
 * clients sending chat turns back to back, and the ledger check that every answered turn is billed once.
 */
import { PROJECT } from './configs.js';
import type { GatewayProcess } from './processes.js';
import { openUsageDb } from './usage-db.js';

export interface ChatLoad {
  /** The ids of the turns answered with 200, in the order they came. */
  readonly answered: string[];
  /** Stops sending; resolves once every request in flight has settled. */
  stop(): Promise<void>;
}

/**
 * `workers` clients sending chat turns to `gw` back to back with `apiKey`. `onResponse` runs after each
 * response, once an answer is counted (a test kills the gateway from there, on the very answer that reaches
 * its count). A client whose request fails stops: the gateway is gone.
 */
export function chatLoad(gw: GatewayProcess, apiKey: string, workers: number, onResponse: (answered: readonly string[]) => void = () => undefined): ChatLoad {
  const answered: string[] = [];
  let stopped = false;
  const worker = async (): Promise<void> => {
    while (!stopped) {
      try {
        const res = await fetch(`${gw.url}/${PROJECT}/chat/v1/chat/completions`, {
          method: 'POST',
          headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
          body: JSON.stringify({ model: 'model-chat', messages: [{ role: 'user', content: `turn ${answered.length}` }], max_tokens: 4 }),
        });
        const body = (await res.json()) as { id?: string };
        if (res.status === 200 && body.id) answered.push(body.id);
        onResponse(answered);
      } catch {
        return; // the gateway is gone
      }
    }
  };
  const running = Array.from({ length: workers }, () => worker());
  return {
    answered,
    async stop() {
      stopped = true;
      await Promise.all(running);
    },
  };
}

/** The answered turns missing from the ledger at `dbPath`, and those billed more than once. */
export function ledgerCheck(dbPath: string, answered: readonly string[]): { answered: number; missing: string[]; doubled: string[] } {
  const usage = openUsageDb(dbPath);
  const missing = answered.filter((id) => usage.rowsFor(id).length === 0);
  const doubled = answered.filter((id) => usage.rowsFor(id).length > 1);
  usage.close();
  return { answered: answered.length, missing, doubled };
}
