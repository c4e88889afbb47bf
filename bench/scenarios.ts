/** What is sent: targets, request bodies, the scenario matrix and the head-of-line scenario. */
import { request } from 'undici';
import { startCpuMeter } from './cpu.js';
import { runLoad, type LoadResult } from './load.js';
import { BENCH_MODEL } from './config.js';

export type TargetKey = 'direct' | 'bare' | 'gateway' | 'gateway-info' | 'gateway-limits';

export interface Target {
  readonly key: TargetKey;
  /** Row label, e.g. "direct (simulator)". */
  readonly label: string;
  /** Full URL of the chat completions route. */
  readonly url: string;
  readonly headers: Record<string, string>;
  /** Process whose CPU time is charged to the requests. */
  readonly cpuPid: number;
  /** Whose CPU the column shows, e.g. "simulator". */
  readonly cpuOf: string;
}

export interface Scenario {
  readonly id: string;
  readonly label: string;
  readonly stream: boolean;
  readonly connections: number;
}

export interface Row {
  readonly scenario: Scenario;
  readonly target: Target;
  readonly load: LoadResult;
  readonly cpuUsPerReq: number | null;
}

export const STREAM_TOKENS = 20;

const SMALL = { model: BENCH_MODEL, messages: [{ role: 'user', content: 'Say hello to the benchmark.' }] };
export const SMALL_BODY = JSON.stringify(SMALL);
/** The knob goes in the body too: the gateway does not forward x-sim-* headers, but keeps unknown fields. */
export const STREAM_BODY = JSON.stringify({ ...SMALL, stream: true, sim: { tokens: STREAM_TOKENS } });
export const STREAM_HEADERS: Record<string, string> = { 'x-sim-tokens': String(STREAM_TOKENS) };

/**
 * A 200,000-character prompt of long common words: over a 32,768-token window by the byte bound (so a
 * gateway must really count it), yet about 15,000 cl100k tokens, so it fits and gets answered.
 */
export function largeBody(chars = 200_000): string {
  const words = [' international', ' implementation', ' responsibility', ' configuration', ' development', ' performance', ' availability', ' infrastructure'];
  let text = 'Summarize:';
  let seed = 12345;
  while (text.length < chars) {
    seed = (seed * 1103515245 + 12345) >>> 0;
    text += words[seed % words.length];
  }
  return JSON.stringify({ model: BENCH_MODEL, messages: [{ role: 'user', content: text.slice(0, chars) }] });
}

export function matrix(quick: boolean): Scenario[] {
  const connections = quick ? [50] : [1, 50, 200];
  const out: Scenario[] = [];
  for (const stream of [false, true]) {
    for (const c of connections) {
      const kind = stream ? `streaming ${STREAM_TOKENS} chunks` : 'non-streaming';
      out.push({ id: `${stream ? 'stream' : 'json'}-${c}`, label: `${kind}, ${c} conn`, stream, connections: c });
    }
  }
  return out;
}

export function requestFor(target: Target, stream: boolean): { headers: Record<string, string>; body: string } {
  return stream
    ? { headers: { ...target.headers, ...STREAM_HEADERS }, body: STREAM_BODY }
    : { headers: target.headers, body: SMALL_BODY };
}

export async function runScenario(target: Target, scenario: Scenario, seconds: number): Promise<Row> {
  const { headers, body } = requestFor(target, scenario.stream);
  const meter = startCpuMeter(target.cpuPid);
  const load = await runLoad({ url: target.url, connections: scenario.connections, seconds, headers, body });
  return { scenario, target, load, cpuUsPerReq: meter.stop(load.completed) };
}

export interface Probe {
  readonly target: string;
  readonly jsonStatus: number | string;
  readonly streamStatus: number | string;
  /** SSE `data:` frames in one streamed answer (20 content + role + finish + [DONE] = 23 expected). */
  readonly streamFrames: number;
}

/** One request of each kind, to show at a glance whether a target answers and passes the knobs on. */
export async function probe(target: Target): Promise<Probe> {
  const send = async (stream: boolean): Promise<{ status: number | string; text: string }> => {
    const { headers, body } = requestFor(target, stream);
    try {
      const res = await request(target.url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });
      return { status: res.statusCode, text: await res.body.text() };
    } catch (err) {
      return { status: (err as Error).message, text: '' };
    }
  };
  const json = await send(false);
  const stream = await send(true);
  const frames = stream.text.split('\n').filter((l) => l.startsWith('data:')).length;
  return { target: target.label, jsonStatus: json.status, streamStatus: stream.status, streamFrames: frames };
}

export interface HolResult {
  readonly target: string;
  readonly alone: LoadResult;
  readonly small: LoadResult;
  readonly large: LoadResult;
}

export const HOL_SMALL_CONNECTIONS = 20;
export const HOL_LARGE_CONNECTIONS = 4;

/** Small-request latency alone, then while 4 connections keep sending 200,000-character prompts. */
export async function headOfLine(target: Target, seconds: number): Promise<HolResult> {
  const small = { url: target.url, connections: HOL_SMALL_CONNECTIONS, seconds, headers: target.headers, body: SMALL_BODY };
  const alone = await runLoad(small);
  const [withLarge, large] = await Promise.all([
    runLoad(small),
    runLoad({ url: target.url, connections: HOL_LARGE_CONNECTIONS, seconds, headers: target.headers, body: largeBody() }),
  ]);
  return { target: target.label, alone, small: withLarge, large };
}
