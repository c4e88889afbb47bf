/**
 * What a streamed Responses turn costs the gateway over the chat turn it translates, in process (issue
 * 35): a ResponsesReply fed what the chat stream hands a reshaping sink for a 20-token answer (the content
 * texts, the finish and usage chunks, [DONE]) into a stand-in reply that keeps nothing. No sockets: the
 * translation, its frames, the opening and terminal Response JSON, and its garbage. CPU time of this
 * process (process.cpuUsage), which other processes on a shared machine move much less than they move a
 * throughput run's gateway CPU per request.
 *   node dist/bench/responses-reply.js [--turns 20000] [--rounds 7] [--other-dist <dist dir>]
 * --other-dist loads that build's responses-reply.js as well; the builds take turns going first.
 */
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { median } from './limiter-cost.js';
import { runIfEntryPoint } from './targets.js';

const distDir = new URL('..', import.meta.url).pathname;

interface Shaper {
  content(escaped: string): string | null;
  chunk(chunk: Record<string, unknown>): string;
  translate(chatFrames: string): string;
  end(frames: string): void;
}
interface Reply {
  readonly reshaper: Shaper;
  beginStream(status: number, contentType: string): void;
  settled(): Promise<void>;
}
type NewReply = (sink: unknown, header: unknown, newId: (prefix: string) => string, finish: () => Promise<void>) => Reply;

interface Build {
  readonly name: string;
  readonly reply: NewReply;
  readonly header: unknown;
}

async function load(name: string, dist: string): Promise<Build> {
  const { ResponsesReply } = (await import(join(dist, 'src/app/responses/responses-reply.js'))) as { ResponsesReply: new (...a: unknown[]) => Reply };
  const { parseResponseRequest } = (await import(join(dist, 'src/schemas/responses-request.js'))) as { parseResponseRequest: (body: unknown) => unknown };
  const request = parseResponseRequest({ model: 'bench-model', input: 'echo: twenty words', stream: true, store: false });
  const header = { id: 'resp_5f1c0a8e2b7d4c3f9a6e1d2b', createdAt: 1764355200, model: 'bench-model', request, store: false, conversationId: null, background: false, namespaces: new Map() };
  return { name, reply: (...a) => new ResponsesReply(...a), header };
}

const sink = { open: true, setHeader: () => undefined, json: () => undefined, beginStream: () => undefined, write: () => true, onWritable: () => undefined, endStream: () => undefined, onDrainDeadline: () => undefined };
const words = Array.from({ length: 20 }, (_, i) => `word${i} `);
const finishChunk = { choices: [{ index: 0, delta: {}, logprobs: null, finish_reason: 'stop' }] };
const usageChunk = { choices: [], usage: { prompt_tokens: 37, completion_tokens: 20, total_tokens: 57 } };
let ids = 0;
const newId = (prefix: string): string => `${prefix}${(++ids).toString(16).padStart(24, '0')}`;
const stored = (): Promise<void> => Promise.resolve();

/** One turn as the chat stream hands it over when the whole answer comes in one read (the usual case under load). */
async function turn(b: Build): Promise<void> {
  const reply = b.reply(sink, b.header, newId, stored);
  reply.beginStream(200, 'text/event-stream');
  const s = reply.reshaper;
  let frames = '';
  for (const w of words) frames += s.content(w) ?? '';
  frames += s.chunk(finishChunk) + s.chunk(usageChunk) + s.translate('data: [DONE]\n\n');
  s.end(frames);
  await reply.settled();
}

async function cpuPerTurn(b: Build, turns: number): Promise<number> {
  const start = process.cpuUsage();
  for (let i = 0; i < turns; i++) await turn(b);
  const used = process.cpuUsage(start);
  return (used.user + used.system) / turns;
}

export async function main(): Promise<void> {
  const { values } = parseArgs({ options: { turns: { type: 'string' }, rounds: { type: 'string' }, 'other-dist': { type: 'string' } } });
  const turns = Number(values.turns ?? 20000);
  const rounds = Number(values.rounds ?? 7);
  const builds = [await load('this build', distDir)];
  const other = values['other-dist'];
  if (other) builds.push(await load('other build', other));
  for (const b of builds) await cpuPerTurn(b, turns / 4); // warm-up
  const perTurn: Record<string, number[]> = {};
  for (let r = 0; r < rounds; r++) {
    for (const b of r % 2 === 0 ? builds : [...builds].reverse()) {
      const us = await cpuPerTurn(b, turns);
      (perTurn[b.name] ??= []).push(us);
      process.stdout.write(`round ${r + 1} ${b.name}: ${us.toFixed(2)} us a turn\n`);
    }
  }
  for (const b of builds) {
    const xs = perTurn[b.name] ?? [];
    process.stdout.write(`${b.name}: median ${median(xs)?.toFixed(2)} us a streamed Responses turn of 20 deltas (${xs.map((x) => x.toFixed(2)).join(', ')})\n`);
  }
  process.stdout.write(`${turns} turns per build and round; load average ${(loadavg()[0] ?? 0).toFixed(2)} at end\n`);
}

runIfEntryPoint(import.meta.url, 'responses-reply', main);
