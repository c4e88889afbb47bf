import { describe, expect, it } from 'vitest';
import { LineQueue } from '../../src/log.js';

/** A stand-in for sonic-boom in buffer mode: records each chunk it is handed. */
function recorder(): { chunks: string[]; flushes: number; destination: ConstructorParameters<typeof LineQueue>[0] } {
  const r = {
    chunks: [] as string[],
    flushes: 0,
    destination: {
      write: (chunk: Buffer) => void r.chunks.push(chunk.toString('utf8')),
      flush: (cb?: (err?: Error) => void) => {
        r.flushes += 1;
        cb?.();
      },
      flushSync: () => undefined,
    },
  };
  return r;
}

const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('LineQueue', () => {
  it('hands the lines of one event-loop turn to the destination as one chunk, in the order written', async () => {
    const r = recorder();
    const q = new LineQueue(r.destination);
    q.write('{"a":1}\n');
    q.write('{"b":"é😀"}\n');
    q.write('{"c":3}\n');
    expect(r.chunks).toEqual([]);
    await nextTurn();
    expect(r.chunks).toEqual(['{"a":1}\n{"b":"é😀"}\n{"c":3}\n']);
    q.write('{"d":4}\n');
    await nextTurn();
    expect(r.chunks).toEqual(['{"a":1}\n{"b":"é😀"}\n{"c":3}\n', '{"d":4}\n']);
  });

  it('hands over what is queued before flushing the destination', () => {
    const r = recorder();
    const q = new LineQueue(r.destination);
    q.write('{"a":1}\n');
    let flushed = false;
    q.flush(() => {
      flushed = true;
    });
    expect(r.chunks).toEqual(['{"a":1}\n']);
    expect(flushed).toBe(true);
  });
});
