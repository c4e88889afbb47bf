/** router/reloading-cache.ts: what the request path reads while reloads and local writes overlap. */
import { describe, expect, it } from 'vitest';
import { createReloadingCache } from '../../../src/router/reloading-cache.js';

/** A load whose answers the test releases one by one. */
function controlledLoad(first: string) {
  const pending: { value: string; resolve: (v: string) => void; reject: (e: Error) => void }[] = [];
  let initial = true;
  const load = (): Promise<string> => {
    if (initial) {
      initial = false;
      return Promise.resolve(first);
    }
    return new Promise((resolve, reject) => pending.push({ value: '', resolve, reject }));
  };
  return { load, pending };
}

describe('createReloadingCache', () => {
  it('keeps a local write when a reload that started before it answers after it', async () => {
    const { load, pending } = controlledLoad('v1');
    const cache = await createReloadingCache(load, () => undefined);
    const reloading = cache.reload();
    cache.replace('written here');
    pending[0]?.resolve('read before the write');
    await reloading;
    expect(cache.current()).toBe('written here');
  });

  it('resolves a superseded reload only once the newer one has applied its answer', async () => {
    const { load, pending } = controlledLoad('v1');
    const cache = await createReloadingCache(load, () => undefined);
    const older = cache.reload();
    const newer = cache.reload();
    let olderDone = false;
    void older.then(() => (olderDone = true));
    pending[0]?.resolve('older');
    await Promise.resolve();
    await Promise.resolve();
    expect(olderDone).toBe(false);
    pending[1]?.resolve('newer');
    await older;
    expect(cache.current()).toBe('newer');
    await newer;
  });

  it('keeps the last value and reports when a reload fails', async () => {
    const { load, pending } = controlledLoad('v1');
    const errors: unknown[] = [];
    const cache = await createReloadingCache(load, (err) => errors.push(err));
    const reloading = cache.reload();
    pending[0]?.reject(new Error('connection lost'));
    await reloading;
    expect(cache.current()).toBe('v1');
    expect(errors).toHaveLength(1);
  });
});
