/**
 * The gateway's own per-read cost of a streamed chat turn, in process (issue 35): streamTurn fed by a
 * stand-in upstream body that brings one chunk per read, as a model does, into a stand-in reply that
 * copies what it is handed as uWS does (a string encoded to UTF-8) and counts it. No sockets, no undici,
 * no uWS: what is left is exactly the code a read runs in the gateway (decode, SSE, restamp, the usage
 * estimate's count, TTFT and first-token checks, the idle deadline, the flush), and its garbage. CPU time of this process (process.cpuUsage), so the other
 * processes on a shared machine move the figure much less than a throughput run's.
 *   node dist/bench/stream-path.js [--streams 2000] [--chunks 200] [--rounds 7] [--other-dist <dist dir>]
 * --other-dist loads that build's chat-stream.js as well. A bare relay (bench/bare-proxy.ts's, the same
 * stand-ins around it) is the floor; the builds and it take turns going first, round by round.
 */
import { EventEmitter } from 'node:events';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { median } from './limiter-cost.js';
import { runIfEntryPoint } from './targets.js';

const distDir = new URL('..', import.meta.url).pathname;

type StreamTurn = (...args: unknown[]) => Promise<void>;

const ID = 'chatcmpl-5f1c0a8e2b7d4c3f9a6e1d2b';
const head = `data: {"id":"${ID}","object":"chat.completion.chunk","created":1764355200,"model":"sim-chat","system_fingerprint":"sim","choices":[`;
const frame = (choice: object): Buffer => Buffer.from(`${head}${JSON.stringify(choice)}]}\n\n`);

/** One stream's reads, as the simulator sends them: the role, one token a read, the finish, usage and [DONE]. */
function reads(chunks: number): Buffer[] {
  const out = [frame({ index: 0, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null })];
  for (let i = 0; i < chunks; i++) out.push(frame({ index: 0, delta: { content: ` word${i}` }, logprobs: null, finish_reason: null }));
  out.push(Buffer.concat([frame({ index: 0, delta: {}, logprobs: null, finish_reason: 'stop' }), Buffer.from(`${head}],"usage":{"prompt_tokens":9,"completion_tokens":${chunks},"total_tokens":${chunks + 9}}}\n\n`), Buffer.from('data: [DONE]\n\n')]));
  return out;
}

/**
 * The stand-in upstream answer, in both shapes a build may read: this build's AnswerStream (`read(reader)`,
 * src/upstream/answer-stream.ts) and, for older builds and the bare relay, undici's body events (`body`).
 */
class Body extends EventEmitter {
  readonly body = this;
  #reader: { onAnswerData(b: Buffer): void; onAnswerEnd(): void } | null = null;
  read(reader: { onAnswerData(b: Buffer): void; onAnswerEnd(): void }): void {
    this.#reader = reader;
  }
  data(buf: Buffer): void {
    if (this.#reader) this.#reader.onAnswerData(buf);
    else this.emit('data', buf);
  }
  end(): void {
    if (this.#reader) this.#reader.onAnswerEnd();
    else this.emit('end');
  }
  pause(): this {
    return this;
  }
  resume(): this {
    return this;
  }
}

/** The socket's send buffer, as uWS has one: what a write hands it is copied there. */
const sendBuffer = Buffer.alloc(64 * 1024);

/**
 * What uWS does with a write: a string is encoded to UTF-8 into the send buffer (uWS.js reads it through
 * V8's String::Utf8Value), a Buffer's bytes are copied as they are.
 */
function socketCopy(chunk: string | Buffer): number {
  if (typeof chunk === 'string') return sendBuffer.write(chunk);
  sendBuffer.set(chunk);
  return chunk.length;
}

/** The turn a stream serves: what chat-dispatch.ts hands streamTurn, with a reply that copies as uWS does and counts. */
function turnRequest(sink: { bytes: number }): Record<string, unknown> {
  const reply = {
    open: true,
    setHeader: () => undefined,
    beginStream: () => undefined,
    write: (chunk: string | Buffer) => {
      sink.bytes += socketCopy(chunk);
      return true;
    },
    onWritable: () => undefined,
    endStream: (last?: string | Buffer) => {
      sink.bytes += last === undefined ? 0 : socketCopy(last);
      reply.open = false;
    },
    onDrainDeadline: () => undefined,
  };
  return {
    req: { requestId: ID, startedAt: performance.now(), log: {}, aborted: false },
    reply,
    turn: { requestId: ID, clientModel: 'bench-chat', lane: 'standard', reasoningModel: false, excludeReasoning: false, splitInlineThink: false, adjustedEffort: null, streamUsage: false },
    deadlines: { requestMs: 300_000, idleMs: 60_000 },
  };
}

/**
 * The bare proxy's relay (bench/bare-proxy.ts) behind the same signature: the reads of a microtask turn
 * gathered and written as one Buffer. The floor the gateway's per-read cost is compared with.
 */
function bareRelay(t: { reply: { write(b: Buffer): boolean; endStream(b?: Buffer): void } }, res: { body: EventEmitter }): Promise<void> {
  return new Promise((resolve) => {
    let pending: Buffer[] = [];
    let scheduled = false;
    const flush = (): void => {
      scheduled = false;
      if (pending.length === 0) return;
      const out = pending.length === 1 ? pending[0]! : Buffer.concat(pending);
      pending = [];
      t.reply.write(out);
    };
    res.body.on('data', (chunk: Buffer) => {
      pending.push(chunk);
      if (!scheduled) {
        scheduled = true;
        queueMicrotask(flush);
      }
    });
    res.body.on('end', () => {
      const rest = pending.length === 0 ? undefined : Buffer.concat(pending);
      pending = [];
      t.reply.endStream(rest);
      resolve();
    });
  });
}

async function oneStream(streamTurn: StreamTurn, data: readonly Buffer[], sink: { bytes: number }): Promise<void> {
  const body = new Body();
  const t = turnRequest(sink);
  const charge = (): void => undefined;
  const promptEstimate = (): number => 9;
  const controller = { abort: () => undefined };
  // The build before issue 35 took (charge, promptEstimate) as two arguments; this one takes them together.
  const done = streamTurn.length === 6 ? streamTurn(t, body, controller, () => false, charge, promptEstimate) : streamTurn(t, body, controller, () => false, { charge, promptEstimate });
  for (const buf of data) {
    body.data(buf);
    // Each read is its own turn of the event loop's microtasks, where the stream's flush runs.
    await Promise.resolve();
  }
  body.end();
  await done;
}

/** CPU microseconds per stream over `streams` streams. */
async function cpuPerStream(streamTurn: StreamTurn, data: readonly Buffer[], streams: number): Promise<number> {
  const sink = { bytes: 0 };
  const start = process.cpuUsage();
  for (let i = 0; i < streams; i++) await oneStream(streamTurn, data, sink);
  const used = process.cpuUsage(start);
  return (used.user + used.system) / streams;
}

export async function main(): Promise<void> {
  const { values } = parseArgs({ options: { streams: { type: 'string' }, chunks: { type: 'string' }, rounds: { type: 'string' }, 'other-dist': { type: 'string' } } });
  const streams = Number(values.streams ?? 2000);
  const long = Number(values.chunks ?? 200);
  const rounds = Number(values.rounds ?? 7);
  const builds: { name: string; turn: StreamTurn }[] = [
    { name: 'bare relay', turn: bareRelay as unknown as StreamTurn },
    { name: 'this build', turn: ((await import(join(distDir, 'src/app/chat/chat-stream.js'))) as { streamTurn: StreamTurn }).streamTurn },
  ];
  const other = values['other-dist'];
  if (other) builds.push({ name: 'other build', turn: ((await import(join(other, 'src/app/chat/chat-stream.js'))) as { streamTurn: StreamTurn }).streamTurn });
  const shortData = reads(20);
  const longData = reads(long);
  for (const b of builds) {
    await cpuPerStream(b.turn, shortData, streams / 4); // warm-up
    await cpuPerStream(b.turn, longData, streams / 4);
  }
  const perRead: Record<string, number[]> = {};
  const perShort: Record<string, number[]> = {};
  for (let r = 0; r < rounds; r++) {
    const rotated = builds.map((_, j) => builds[(r + j) % builds.length]!);
    for (const b of r % 2 === 0 ? rotated : rotated.reverse()) {
      const s = await cpuPerStream(b.turn, shortData, streams);
      const l = await cpuPerStream(b.turn, longData, streams);
      (perRead[b.name] ??= []).push((l - s) / (long - 20));
      (perShort[b.name] ??= []).push(s);
      process.stdout.write(`round ${r + 1} ${b.name}: ${s.toFixed(1)} us / 20-chunk stream, ${((l - s) / (long - 20)).toFixed(3)} us / read\n`);
    }
  }
  const bare = perRead['bare relay'] ?? [];
  for (const b of builds) {
    const rs = perRead[b.name] ?? [];
    const added = rs.map((x, i) => x - (bare[i] ?? Number.NaN));
    process.stdout.write(
      `${b.name}: median ${median(rs)?.toFixed(3)} us / read (${rs.map((x) => x.toFixed(3)).join(', ')}); added over the bare relay, median of rounds ${median(added)?.toFixed(3)} us / read; ` +
        `${median(perShort[b.name] ?? [])?.toFixed(1)} us / 20-chunk stream\n`,
    );
  }
  process.stdout.write(`${streams} streams of 20 and ${long} chunks per build and round, one chunk a read; load average ${(loadavg()[0] ?? 0).toFixed(2)} at end\n`);
}

runIfEntryPoint(import.meta.url, 'stream-path', main);
