/**
 * The one case list every client library runs (issue 21), in the manner of hono's shared router tests:
 * each library has a CompatClient (<library>-client.ts) and clients.test.ts runs this list per client.
 * Every case asserts an exact outcome the simulator makes deterministic (docs/simulator.md): `echo:`
 * prompts come back verbatim, one word per token; with tools the first tool is called with arguments
 * filled from its schema (first enum value, "sample" for strings); a last message from a tool gets
 * "Tool result received: ...". What reached the upstream is read from the simulator's request log, each
 * case finding its own requests by a nonce.
 */
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { PROJECT } from '../helpers/configs.js';
import { onlyErrorEnvelope, recordingFetch } from '../helpers/recording-fetch.js';
import { simRequests, waitForSim, type SimRequest } from '../helpers/simulator-log.js';
import { Person, WeatherInput, type CompatClient, type Target, type WeatherTool } from './compat-client.js';
import type { CompatSuite } from './compat-suite.js';

/** Direct: `/{project}/{endpoint}/v1`. Routed: `/{project}/_semantic/router/v1`, the router picks the endpoint. */
type BaseKind = 'direct' | 'routed';

interface CompatCase {
  readonly name: string;
  /** The base URLs the case runs on; SPEC's router only takes chat completions, so most are direct only. */
  readonly on: readonly BaseKind[];
  run(client: CompatClient, ctx: CaseContext): Promise<void>;
}

interface CaseContext {
  readonly suite: CompatSuite;
  /** The chat target for this run's base URL, with a fresh plain fetch. */
  readonly target: Target;
  /** A hex string unique to this case run, put in prompts so the simulator log can be searched for it. */
  readonly nonce: string;
}

/** `delay_ms` per token on the simulator's 16-token default answer: about 3 s to finish on its own. */
const SLOW = { delay_ms: 200 } as const;
/** Well under the 3 s the slow answer takes, and generous for a loaded two-core machine. */
const PROMPT_STOP_MS = 1500;

/** The tokens the simulator streams for `echo: <words>`: each space stays on the word after it. */
function echoTokens(words: string): string[] {
  return words.split(' ').map((word, i) => (i === 0 ? word : ` ${word}`));
}

/** The chat requests carrying `nonce`, oldest first (the log lists newest first). */
function requestsWith(all: readonly SimRequest[], nonce: string): SimRequest[] {
  return all.filter((r) => r.path === '/v1/chat/completions' && r.body.includes(nonce)).reverse();
}

/** The parts of a chat request body, as the simulator received it, that the cases look at. */
interface UpstreamBody {
  readonly messages: readonly {
    readonly role: string;
    readonly content: unknown;
    readonly tool_call_id?: string;
    readonly tool_calls?: readonly { readonly id: string }[];
  }[];
  readonly response_format?: { readonly type: string; readonly json_schema?: { readonly schema?: { readonly properties?: object } } };
}

function upstreamBody(request: SimRequest | undefined): UpstreamBody {
  if (!request) throw new Error('the upstream request was not found in the simulator log');
  return JSON.parse(request.body) as UpstreamBody;
}

const CASES: readonly CompatCase[] = [
  {
    name: 'answers a chat completion with the model\'s text',
    on: ['direct', 'routed'],
    async run(client, { target, nonce }) {
      const words = `compat chat ${nonce} reaches the model`;
      const result = await client.chat(target, `echo: ${words}`);
      expect(result.text).toBe(words);
    },
  },
  {
    name: 'streams the answer as one delta per token, in order',
    on: ['direct', 'routed'],
    async run(client, { target, nonce }) {
      const words = `compat stream ${nonce} arrives piece by piece`;
      const result = await client.stream(target, `echo: ${words}`);
      expect(result.deltas).toEqual(echoTokens(words));
    },
  },
  {
    name: 'reports prompt, completion and total tokens for a completion and for a stream alike',
    on: ['direct'],
    async run(client, { target, nonce }) {
      const words = `usage ${nonce} counts five tokens`;
      const whole = await client.chat(target, `echo: ${words}`);
      const streamed = await client.stream(target, `echo: ${words}`);
      for (const usage of [whole.usage, streamed.usage]) {
        expect(usage.output).toBe(5);
        expect(usage.input).toBeGreaterThan(0);
        expect(usage.total).toBe((usage.input ?? 0) + 5);
      }
      expect(streamed.usage).toEqual(whole.usage);
    },
  },
  {
    name: 'runs a tool the model calls and sends its result back for the final answer',
    on: ['direct'],
    async run(client, { suite, target, nonce }) {
      const inputs: WeatherInput[] = [];
      const tool: WeatherTool = {
        name: 'get_weather',
        description: 'Current weather for a city',
        schema: WeatherInput,
        async execute(input) {
          inputs.push(input);
          return { forecast: `sunny-${nonce}` };
        },
      };
      const result = await client.toolRoundTrip(target, `What is the weather in Paris? ${nonce}`, tool);

      expect(inputs).toEqual([{ city: 'sample', unit: 'celsius' }]);
      expect(result.text).toMatch(/^Tool result received:/);
      // Exactly two model turns; the second carries the tool's own output, answering the first's call.
      const turns = requestsWith(await simRequests(suite.sim.url, 50), nonce);
      expect(turns).toHaveLength(2);
      const messages = upstreamBody(turns[1]).messages;
      const call = messages.find((m) => m.role === 'assistant')?.tool_calls?.[0];
      const toolMessage = messages.at(-1);
      expect(toolMessage?.role).toBe('tool');
      expect(toolMessage?.tool_call_id).toBe(call?.id);
      expect(JSON.stringify(toolMessage?.content)).toContain(`sunny-${nonce}`);
    },
  },
  {
    name: 'parses structured output into an object with the schema\'s fields, requested as json_schema',
    on: ['direct'],
    async run(client, { suite, target, nonce }) {
      const person: Person = { name: `Ada ${nonce}`, born: 1815, languages: ['English', 'French'] };
      const parsed = await client.structured(target, `echo: ${JSON.stringify(person)}`);
      expect(parsed).toEqual(person);
      const [request] = requestsWith(await simRequests(suite.sim.url, 50), nonce);
      const format = upstreamBody(request).response_format;
      expect(format?.type).toBe('json_schema');
      expect(Object.keys(format?.json_schema?.schema?.properties ?? {}).sort()).toEqual(['born', 'languages', 'name']);
    },
  },
  {
    name: 'aborts a pending completion through its AbortSignal, and the gateway drops the upstream request',
    on: ['direct'],
    async run(client, { suite, target, nonce }) {
      const controller = new AbortController();
      const pending = client.chat(target, `take your time ${nonce}`, { signal: controller.signal, knobs: SLOW }).then(
        () => 'completed',
        (error: unknown) => error,
      );
      await waitForSim(suite.sim.url, (r) => r.body.includes(nonce));
      const abortedAt = Date.now();
      controller.abort();
      const outcome = await pending;
      expect(client.isAbort(outcome), `settled with ${String(outcome)}`).toBe(true);
      expect(Date.now() - abortedAt).toBeLessThan(PROMPT_STOP_MS);
      const upstream = await waitForSim(suite.sim.url, (r) => r.body.includes(nonce) && r.aborted);
      expect(upstream.completed).toBe(false);
    },
  },
  {
    name: 'aborts a stream midway through its AbortSignal, and no further deltas arrive',
    on: ['direct'],
    async run(client, { suite, target, nonce }) {
      const controller = new AbortController();
      const seen: string[] = [];
      const onDelta = (delta: string): void => {
        seen.push(delta);
        if (seen.length === 2) controller.abort();
      };
      const startedAt = Date.now();
      const outcome = await client.stream(target, `stream slowly ${nonce}`, { signal: controller.signal, knobs: SLOW, onDelta }).then(
        () => 'ends quietly' as const,
        (error: unknown) => error,
      );
      if (client.streamAbort === 'ends quietly') expect(outcome).toBe('ends quietly');
      else expect(client.isAbort(outcome), `settled with ${String(outcome)}`).toBe(true);
      expect(seen).toHaveLength(2);
      // Two tokens in about 0.4 s, against about 3 s for the whole answer.
      expect(Date.now() - startedAt).toBeLessThan(PROMPT_STOP_MS);
      const upstream = await waitForSim(suite.sim.url, (r) => r.body.includes(nonce) && r.aborted);
      expect(upstream.completed).toBe(false);
    },
  },
  {
    name: 'throws its error type carrying the gateway\'s 400 code and message, after one request',
    on: ['direct'],
    async run(client, { target }) {
      const recorded = recordingFetch();
      const outcome = await client.chat({ ...target, fetch: recorded.fetch }, 'too hot', { temperature: 5 }).then(
        () => 'completed',
        (error: unknown) => error,
      );
      const wire = await onlyErrorEnvelope(recorded);
      expect(wire).toMatchObject({ status: 400, code: 'invalid_request' });
      const details = client.errorDetails(outcome);
      expect(details, `settled with ${String(outcome)}`).not.toBeNull();
      expect(details?.status).toBe(400);
      expect(details?.code).toBe(wire.code);
      expect(details?.message).toContain(wire.message);
    },
  },
  {
    name: 'throws its error type carrying the gateway\'s 429 code and message, without retrying',
    on: ['direct'],
    async run(client, { suite }) {
      const base = `${suite.throttled.url}/${PROJECT}`;
      const apiKey = suite.throttledKeys.full;
      // Spend the project's ceiling on the cheapest inference route (models counts like chat).
      for (let spent = 0; spent < 20; spent++) {
        const res = await fetch(`${base}/v1/models`, { headers: { authorization: `Bearer ${apiKey}` } });
        await res.arrayBuffer();
        if (res.headers.get('ratelimit-remaining') === '0') break;
      }
      const recorded = recordingFetch();
      const startedAt = Date.now();
      const outcome = await client.chat({ baseURL: `${base}/chat/v1`, apiKey, fetch: recorded.fetch }, 'one too many').then(
        () => 'completed',
        (error: unknown) => error,
      );
      expect(Date.now() - startedAt).toBeLessThan(PROMPT_STOP_MS);
      const wire = await onlyErrorEnvelope(recorded);
      expect(wire).toMatchObject({ status: 429, code: 'rate_limit_exceeded' });
      const details = client.errorDetails(outcome);
      expect(details, `settled with ${String(outcome)}`).not.toBeNull();
      expect(details?.status).toBe(429);
      expect(details?.code).toBe(wire.code);
      expect(details?.message).toContain(wire.message);
    },
  },
  {
    name: 'embeds texts on the embedding endpoint with the upstream\'s vectors, in input order',
    on: ['direct'],
    async run(client, { suite, nonce }) {
      const texts = [`the quick brown fox ${nonce}`, 'lorem ipsum dolor sit amet', `the quick brown fox ${nonce}`];
      const result = await client.embed({ baseURL: suite.embedBase, apiKey: suite.keys.full, fetch }, texts);
      // The simulator's own vectors for the same texts: what the gateway must hand back unchanged.
      const res = await fetch(`${suite.sim.url}/embeddings`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'sim-embed', input: texts }),
      });
      const expected = ((await res.json()) as { data: { embedding: number[] }[] }).data.map((d) => d.embedding);
      expect(result.vectors).toHaveLength(3);
      result.vectors.forEach((vector, i) => {
        expect(vector).toHaveLength(expected[i]?.length ?? -1);
        // float32 precision: the openai SDK asks for base64 (little-endian float32) by default.
        vector.forEach((value, j) => expect(value).toBeCloseTo(expected[i]?.[j] ?? Number.NaN, 6));
      });
      expect(result.vectors[0]).toEqual(result.vectors[2]);
      expect(result.vectors[0]).not.toEqual(result.vectors[1]);
      if (client.reportsEmbeddingTokens) expect(result.tokens).toBeGreaterThan(0);
    },
  },
];

function nonce(): string {
  return randomBytes(6).toString('hex');
}

/**
 * Registers the shared cases for one library on the running suite: every case on the direct base URL,
 * the chat ones on the routed base URL too. Libraries share the suite's processes; nonces keep their
 * requests apart in the simulator log.
 */
export function runCompatCases(client: CompatClient, suite: CompatSuite): void {
  const targets: Record<BaseKind, () => Target> = {
    direct: () => ({ baseURL: suite.chatBase, apiKey: suite.keys.full, fetch }),
    routed: () => ({ baseURL: suite.routedBase, apiKey: suite.routerKeys.full, fetch }),
  };
  for (const kind of ['direct', 'routed'] as const) {
    describe(`${client.name} on the ${kind} base URL`, () => {
      for (const c of CASES.filter((candidate) => candidate.on.includes(kind))) {
        it(c.name, () => c.run(client, { suite, target: targets[kind](), nonce: nonce() }));
      }
    });
  }
}
