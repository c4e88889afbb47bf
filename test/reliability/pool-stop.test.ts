/**
 * Closing the worker pool and the similarity thread while hnswlib-node is busy. A worker thread
 * terminated inside a Node-API call makes node-addon-api raise a fatal error ("FATAL ERROR:
 * Error::ThrowAsJavaScriptException napi_throw") and the whole process ends with SIGABRT: a gateway
 * stopped (SIGTERM) while the router's index build or a search was running exited with SIGABRT instead
 * of 0 (CI, once). The pools now stop their threads only between tasks or at a build's safe points.
 *
 * Each case runs in a child process (the compiled pools in dist/, as the gateway runs them), closes in the
 * middle of the native work a few times over, then exits 0: a regression aborts the child.
 */
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { trackChild } from '../helpers/child-registry.js';
import { tempDir } from '../helpers/processes.js';

const dist = (path: string): string => pathToFileURL(join(process.cwd(), 'dist', path)).href;

/**
 * Runs an ES module body in a child node (from a file: `--input-type` would be inherited by its worker
 * threads); resolves with its exit status (or signal) and output.
 */
function runChild(body: string): Promise<{ status: number | string; output: string }> {
  const script = join(tempDir(), 'child.mjs');
  writeFileSync(script, body);
  return new Promise((resolve) => {
    const proc = trackChild(spawn(process.execPath, [script], { stdio: ['ignore', 'pipe', 'pipe'] }));
    let output = '';
    proc.stdout.on('data', (d: Buffer) => (output += d.toString()));
    proc.stderr.on('data', (d: Buffer) => (output += d.toString()));
    proc.on('exit', (code, signal) => resolve({ status: code ?? signal ?? 'unknown', output }));
  });
}

/** count x dims random floats (a graph that takes about a second to build). */
const VECTORS = `(count, dims) => Float32Array.from({ length: count * dims }, () => Math.random() - 0.5)`;

describe('closing the pools while hnswlib-node runs', () => {
  it('a build in flight is cancelled at a safe point and the process exits 0', async () => {
    const dir = tempDir();
    const { status, output } = await runChild(`
      import { createWorkerPool } from ${JSON.stringify(dist('src/pool/worker-pool.js'))};
      const vectors = ${VECTORS};
      const results = [];
      for (let round = 0; round < 6; round += 1) {
        const pool = createWorkerPool({ minThreads: 1, maxThreads: 2 });
        await pool.whenReady();
        const builds = [0, 1].map((i) =>
          pool.buildIndex({ op: 'build', file: ${JSON.stringify(dir)} + '/g' + round + '-' + i + '.hnsw', dimensions: 128, vectors: vectors(20000, 128), m: 16, efConstruction: 200 })
            .then(() => 'built', (err) => err.message));
        await new Promise((r) => setTimeout(r, 30 + round * 40));
        const started = Date.now();
        await pool.close();
        results.push({ closeMs: Date.now() - started, builds: await Promise.all(builds) });
      }
      process.stdout.write(JSON.stringify(results) + '\\n');
      process.exit(0);
    `);
    expect(status, `child exited ${status}:\n${output.slice(-3000)}`).toBe(0);
    const results = JSON.parse(output.trim().split('\n').pop() ?? '[]') as { closeMs: number; builds: string[] }[];
    expect(results).toHaveLength(6);
    for (const r of results) {
      // Built before the close, cancelled in flight, or failed in the queue (AbortError) by the close.
      for (const b of r.builds) expect(b).toMatch(/^(built|index build cancelled: the pool is closing|The task has been aborted)$/);
    }
    expect(results.flatMap((r) => r.builds)).toContain('index build cancelled: the pool is closing');
  }, 60_000);

  it('searches in flight on the similarity thread finish before the thread ends: the process exits 0', async () => {
    const dir = tempDir();
    const { status, output } = await runChild(`
      import { createWorkerPool } from ${JSON.stringify(dist('src/pool/worker-pool.js'))};
      import { createSimilarityPool } from ${JSON.stringify(dist('src/pool/similarity-pool.js'))};
      const vectors = ${VECTORS};
      const dims = 128, count = 6000;
      const pool = createWorkerPool({ minThreads: 1, maxThreads: 1 });
      const file = ${JSON.stringify(dir)} + '/g.hnsw';
      const packed = vectors(count, dims);
      await pool.buildIndex({ op: 'build', file, dimensions: dims, vectors: packed.slice(), m: 16, efConstruction: 64 });
      await pool.close();
      const starts = Int32Array.from({ length: 61 }, (_, i) => i * (count / 60));
      const allowed = Int32Array.from({ length: 30 }, (_, i) => i * 2);
      const outcomes = { answered: 0, failed: 0 };
      for (let round = 0; round < 8; round += 1) {
        const similarity = createSimilarityPool();
        await similarity.load({ key: 'k', version: 1, file, dimensions: dims, starts, efSearch: 400, vectors: packed.slice() });
        // One answered before the flood (the thread works), then the close lands among the rest.
        await similarity.search({ key: 'k', version: 1, query: vectors(1, dims), k: 50, allowed, exact: new Int32Array(0) });
        outcomes.answered += 1;
        const searches = [];
        const until = Date.now() + 20 + round * 15;
        // Batches of filtered searches (the filter calls into JS per visited label) until the close.
        while (Date.now() < until) {
          for (let i = 0; i < 20; i += 1) {
            searches.push(similarity.search({ key: 'k', version: 1, query: vectors(1, dims), k: 50, allowed, exact: new Int32Array(0) })
              .then(() => (outcomes.answered += 1), () => (outcomes.failed += 1)));
          }
          await new Promise((r) => setImmediate(r));
        }
        await similarity.close();
        await Promise.all(searches);
      }
      process.stdout.write(JSON.stringify(outcomes) + '\\n');
      process.exit(0);
    `);
    expect(status, `child exited ${status}:\n${output.slice(-3000)}`).toBe(0);
    const outcomes = JSON.parse(output.trim().split('\n').pop() ?? '{}') as { answered: number; failed: number };
    expect(outcomes.answered).toBeGreaterThan(0);
  }, 60_000);
});
