import { afterEach, describe, expect, it, vi } from 'vitest';
import { LogSink, type WriteFn } from '../../src/log-sink.js';

type Callback = Parameters<WriteFn>[5];

/**
 * A file descriptor stand-in: records every asynchronous write and answers it when told (`answer`), taking
 * `take` bytes of it (all by default) or failing with `code`.
 */
function fakeFile() {
  const f = {
    bytes: [] as Buffer[],
    writes: [] as { data: Buffer; cb: Callback }[],
    syncWrites: 0,
    write: ((_fd, buffer, offset, length, _position, cb) => {
      f.writes.push({ data: Buffer.from(buffer.subarray(offset, offset + length)), cb });
    }) as WriteFn,
    writeSync: (_fd: number, buffer: Buffer, offset: number, length: number): number => {
      f.syncWrites++;
      f.bytes.push(Buffer.from(buffer.subarray(offset, offset + length)));
      return length;
    },
    /** Answers the oldest unanswered write. */
    answer(how: { take?: number; code?: string } = {}): void {
      const w = f.writes.shift();
      if (!w) throw new Error('no write to answer');
      if (how.code) {
        w.cb(Object.assign(new Error(how.code), { code: how.code }), 0);
        return;
      }
      const n = how.take ?? w.data.length;
      f.bytes.push(w.data.subarray(0, n));
      w.cb(null, n);
    },
    /** Answers writes in full until none is waiting. */
    drain(): void {
      while (f.writes.length > 0) f.answer();
    },
    text: (): string => Buffer.concat(f.bytes).toString('utf8'),
  };
  return f;
}

const line = (i: number, pad = 200): string => `{"n":${i},"pad":"${'x'.repeat(pad)}"}\n`;

afterEach(() => {
  vi.useRealTimers();
});

describe('LogSink', () => {
  it('keeps short lines until a flush, then writes them once, in order, and calls back after the write', () => {
    const f = fakeFile();
    const sink = new LogSink(1, f);
    sink.write('{"a":1}\n');
    sink.write('{"b":"é😀"}\n');
    expect(f.writes).toHaveLength(0);
    let flushed = false;
    sink.flush(() => {
      flushed = true;
    });
    expect(f.writes).toHaveLength(1);
    expect(flushed).toBe(false);
    f.answer();
    expect(flushed).toBe(true);
    expect(f.text()).toBe('{"a":1}\n{"b":"é😀"}\n');
  });

  it('calls a flush back at once when nothing waits', () => {
    const sink = new LogSink(1, fakeFile());
    const cb = vi.fn();
    sink.flush(cb);
    expect(cb).toHaveBeenCalledWith();
  });

  it('writes on its own once enough bytes wait, and never splits a line between two writes', () => {
    const f = fakeFile();
    const sink = new LogSink(1, f);
    const lines = Array.from({ length: 1000 }, (_, i) => line(i, (i * 37) % 500));
    for (const l of lines) sink.write(l);
    expect(f.writes.length).toBeGreaterThan(0);
    for (const w of f.writes) expect(w.data.toString('utf8').endsWith('\n')).toBe(true);
    f.drain();
    sink.flush();
    f.drain();
    expect(f.text()).toBe(lines.join(''));
  });

  it('writes a line longer than a chunk whole, after the lines before it', () => {
    const f = fakeFile();
    const sink = new LogSink(1, f);
    sink.write('{"before":1}\n');
    const long = `{"long":"${'é'.repeat(40_000)}"}\n`;
    sink.write(long);
    sink.write('{"after":1}\n');
    sink.flush();
    f.drain();
    expect(f.text()).toBe(`{"before":1}\n${long}{"after":1}\n`);
  });

  it('writes the rest of a partial write before anything else', () => {
    const f = fakeFile();
    const sink = new LogSink(1, f);
    sink.write('{"a":"0123456789"}\n');
    sink.flush();
    f.answer({ take: 5 });
    sink.write('{"b":2}\n');
    sink.flush();
    f.drain();
    sink.flush();
    f.drain();
    expect(f.text()).toBe('{"a":"0123456789"}\n{"b":2}\n');
  });

  it('tries a busy destination (EAGAIN) again later, losing nothing', () => {
    vi.useFakeTimers();
    const f = fakeFile();
    const sink = new LogSink(1, f);
    sink.write('{"a":1}\n');
    sink.flush();
    f.answer({ code: 'EAGAIN' });
    expect(f.writes).toHaveLength(0);
    vi.advanceTimersByTime(100);
    expect(f.writes).toHaveLength(1);
    f.answer();
    expect(f.text()).toBe('{"a":1}\n');
  });

  it('stops writing after a destination failure (a closed stdout) without throwing, and says so to a flush', () => {
    const f = fakeFile();
    const sink = new LogSink(1, f);
    sink.write('{"a":1}\n');
    sink.flush();
    f.answer({ code: 'EPIPE' });
    expect(() => sink.write('{"b":2}\n')).not.toThrow();
    const cb = vi.fn();
    sink.flush(cb);
    expect(f.writes).toHaveLength(0);
    expect(cb).toHaveBeenCalledWith(expect.any(Error));
  });

  it('drops and counts lines beyond its bound while the destination takes nothing, and says how many once it does', () => {
    const f = fakeFile();
    const sink = new LogSink(1, { ...f, maxPendingBytes: 100_000 });
    let i = 0;
    while (f.writes.length === 0) sink.write(line(i++));
    // The destination hangs on its first write: lines pile up to the bound, then are dropped.
    for (let j = 0; j < 1000; j++) sink.write(line(i++));
    f.drain();
    sink.flush();
    f.drain();
    sink.write('{"after":1}\n');
    sink.flush();
    f.drain();
    const out = f.text().split('\n').filter(Boolean).map((l) => JSON.parse(l) as { n?: number; dropped?: number; after?: number });
    const kept = out.filter((o) => o.n !== undefined).length;
    const note = out.find((o) => o.dropped !== undefined);
    expect(note?.dropped).toBe(i - kept);
    expect(kept).toBeLessThan(i);
    expect(out.at(-1)).toEqual({ after: 1 });
  });

  it('writes what waits synchronously at exit, leaving a write under way to finish on its own', () => {
    const f = fakeFile();
    const sink = new LogSink(1, f);
    sink.write('{"a":1}\n');
    sink.flush();
    sink.write('{"b":2}\n');
    sink.flushSync();
    expect(f.syncWrites).toBe(1);
    f.answer();
    expect(f.text().split('\n').filter(Boolean).sort()).toEqual(['{"a":1}', '{"b":2}']);
  });
});
