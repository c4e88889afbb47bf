/**
 * The PostgreSQL catalog holds every key in a snapshot refreshed by change notices, which arrive a moment
 * after another replica's commit: a key it does not hold yet is asked of the store once (lookupMissed).
 */
import { describe, expect, it } from 'vitest';
import type { ApiKeyRecord, KeyCredential } from '../../../src/core/records.js';
import type { CatalogSnapshot } from '../../../src/core/store/catalog-store.js';
import { createPreloadedCatalog } from '../../../src/store/catalog.js';

const key = (id: string, revokedAt: number | null = null): ApiKeyRecord => ({
  id, projectId: 'proj_a', name: null, prefix: 'svc_a_AAAA', scopes: ['inference'], allowedIps: [], blockedIps: [], ipFilter: null,
  expiresAt: null, quotaRequests: 0, quotaWindow: 60, endpointId: null, allowedWorkspaceIds: null, userId: null, issuedBy: null, source: 'api', createdAt: 0, revokedAt,
});
const credential = (k: ApiKeyRecord): KeyCredential => ({ key: k, validUntil: null });

/** A store whose rows the test sets, and whose notices it sends. */
function fakeStore() {
  const rows = new Map<string, KeyCredential>();
  let notify: () => void = () => undefined;
  let reads = 0;
  let gate: Promise<void> | null = null;
  const store = {
    loadSnapshot: async (): Promise<CatalogSnapshot> => ({ projects: [], workspaces: [], endpoints: [], credentials: new Map(rows) }),
    findCredential: async (hash: string): Promise<KeyCredential | null> => {
      reads += 1;
      if (gate) await gate;
      return rows.get(hash) ?? null;
    },
  };
  return {
    rows,
    store,
    onChange: (_topic: 'catalog', fn: () => void) => ((notify = fn), () => undefined),
    notify: () => notify(),
    reads: () => reads,
    /** Store reads wait until the returned function is called. */
    hold: (): (() => void) => {
      let open: () => void = () => undefined;
      gate = new Promise<void>((resolve) => (open = resolve));
      return () => {
        gate = null;
        open();
      };
    },
  };
}

describe('a key the snapshot does not hold yet', () => {
  it('is read from the store once, then held until the next snapshot', async () => {
    const f = fakeStore();
    const catalog = await createPreloadedCatalog({ store: f.store, onChange: f.onChange, onError: () => undefined });
    f.rows.set('h1', credential(key('key_1')));
    expect(catalog.findCredential('h1')).toBeNull();
    expect(await catalog.lookupMissed?.('h1')).toBe(true);
    expect(catalog.findCredential('h1')?.key.id).toBe('key_1');
    expect(await catalog.lookupMissed?.('nope')).toBe(false);
    expect(catalog.findCredential('nope')).toBeNull();
  });

  it('gives way to a snapshot loaded while it was read: a revocation in it wins', async () => {
    const f = fakeStore();
    const catalog = await createPreloadedCatalog({ store: f.store, onChange: f.onChange, onError: () => undefined });
    f.rows.set('h1', credential(key('key_1')));
    const go = f.hold();
    const looked = catalog.lookupMissed?.('h1');
    // Revoked and noticed while the read is out: the new snapshot has the revoked key.
    f.rows.set('h1', credential(key('key_1', 5)));
    f.notify();
    await catalog.reload();
    go();
    expect(await looked).toBe(true);
    expect(catalog.findCredential('h1')?.key.revokedAt).toBe(5);
  });

  it('asks the store at most four keys at once: a flood of unknown keys is refused without a query past that', async () => {
    const f = fakeStore();
    const catalog = await createPreloadedCatalog({ store: f.store, onChange: f.onChange, onError: () => undefined });
    const go = f.hold();
    const looked = Array.from({ length: 10 }, (_, i) => catalog.lookupMissed?.(`random${i}`));
    expect(f.reads()).toBe(4);
    go();
    expect(await Promise.all(looked)).toEqual(Array(10).fill(false));
  });
});
