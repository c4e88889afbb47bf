/** The ledger rows both ledger benches store (pg-ledger.ts, sqlite-ledger.ts): `n` turns from time `at`. */
import type { LedgerRow } from '../src/core/store/usage-store.js';

export function ledgerBatch(n: number, at: number): LedgerRow[] {
  return Array.from({ length: n }, (_, i) => ({
    requestId: `req_${at}_${i}`, projectId: 'proj_bench', workspaceId: i % 2 === 0 ? 'ws_01' : null, endpointId: `ep_${i % 4}`, keyId: 'key_1',
    route: 'chat', promptTokens: 100, completionTokens: 50, cachedTokens: 0, reasoningTokens: null, serviceTier: 'default', tierMultiplier: 1,
    status: 'completed', usageSource: 'upstream', latencyMs: 12.5, createdAt: at + i, model: 'model-1', costNanos: 1500,
  }));
}
