/**
 * The fuzz run extended to the agents' WebSocket (issue 31): mutated `enroll` frames and manifests
 * (structural mutations from test/helpers/json-fuzz.ts, hostile schemas: backtracking patterns, past
 * every bound, uncompilable; cut, non-object, binary and invalid UTF-8 frames), then mutated runtime
 * frames on one enrolled agent. The gateway must answer every enroll with `enrolled` or a protocol
 * error and close 4400 (1007 for text that is not UTF-8), every runtime frame with nothing or an
 * `invalid_body` error without closing, keep the agent serving invocations, keep /healthz answering, and
 * log no unexpected error. Deterministic from its seed: FUZZ_SEED=<n> explores another set.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execConfig, makeExecKeys, mintJoinKey, PROJECT, WS_DEFAULT, type ExecKeys } from '../helpers/exec-config.js';
import { agentSocket } from '../helpers/exec-agents.js';
import { call } from '../helpers/http.js';
import { caseSeed, mutateStructure, NON_OBJECTS, Rng, serialize, truncated, withInvalidUtf8, type FuzzObject, type StructuralKind } from '../helpers/json-fuzz.js';
import { startGatewayProcess, type GatewayProcess } from '../helpers/processes.js';

const SEED = Number(process.env.FUZZ_SEED ?? 0x5eed_0031);
const ENROLL_CASES = 160;
const RUNTIME_CASES = 160;
const CONCURRENCY = 8;
const ENROLL_ERRORS = new Set(['exec_manifest_invalid', 'agent_name_in_use', 'agent_name_conflict']);
const STRUCTURAL: readonly StructuralKind[] = ['drop', 'retype', 'weird_string', 'extra_field', 'duplicate_key', 'deep_nesting'];

let gw: GatewayProcess;
let keys: ExecKeys;

beforeAll(async () => {
  keys = makeExecKeys();
  // Unmetered connections: the fuzzer is about frames, not a wall of 429s.
  gw = await startGatewayProcess(execConfig(keys, { exec: { enrollments_per_minute_per_key: 0, enrollments_per_minute_per_project: 0 } }));
});

afterAll(async () => {
  await gw?.stop();
});

const connectUrl = (): string => `${gw.url.replace(/^http/, 'ws')}/${PROJECT}/v1/exec/agents/connect`;

/** A schema using what patterns reach: `pattern`, `patternProperties`, `$defs`/`$ref`, arrays, enums. */
const richSchema = (): FuzzObject => ({
  type: 'object',
  properties: {
    host: { type: 'string', pattern: '^([a-z0-9]+\\.?)+$', maxLength: 253 },
    count: { type: 'integer', minimum: 0, maximum: 100 },
    tags: { type: 'array', items: { type: 'string', enum: ['a', 'b', 'c'] }, maxItems: 5 },
    headers: { type: 'object', patternProperties: { '^x-[a-z-]+$': { type: 'string' } }, additionalProperties: false },
    target: { $ref: '#/$defs/target' },
  },
  required: ['host'],
  $defs: { target: { anyOf: [{ type: 'string', format: 'uri' }, { type: 'null' }] } },
  examples: [{ host: 'example.com' }],
});

function validEnroll(rng: Rng, index: number): FuzzObject {
  const tools = Array.from({ length: rng.between(1, 3) }, (_, i): FuzzObject => ({
    name: `t${i}`,
    description: `tool ${i}`,
    input_schema: rng.chance(0.7) ? richSchema() : { type: 'object' },
    risk: rng.pick(['read', 'write', 'destructive']),
    mcp_visible: rng.chance(0.5),
  }));
  return { type: 'enroll', registration_name: `fz-${index}`, ...(rng.chance(0.3) ? { description: 'fuzzed agent' } : {}), manifest: { tools } };
}

/** Schemas the gateway must refuse (exec_manifest_invalid), quickly and without blocking. */
const HOSTILE: readonly (readonly [string, () => FuzzObject])[] = [
  ['a backreference', () => ({ type: 'object', properties: { w: { type: 'string', pattern: '^(a+)+\\1$' } } })],
  ['a lookahead', () => ({ type: 'object', properties: { w: { type: 'string', pattern: '^(?=a)a+$' } } })],
  ['a backreference key', () => ({ type: 'object', patternProperties: { '^(x)\\1$': { type: 'integer' } } })],
  ['a 2,000-character pattern', () => ({ type: 'object', properties: { w: { type: 'string', pattern: 'a'.repeat(2000) } } })],
  ['an invalid pattern', () => ({ type: 'object', properties: { w: { type: 'string', pattern: '([a-z' } } })],
  ['1,500 properties', () => ({ type: 'object', properties: Object.fromEntries(Array.from({ length: 1500 }, (_, i) => [`p${i}`, { type: 'string' }])) })],
  ['an anyOf of 2,000 branches', () => ({ type: 'object', properties: { a: { anyOf: Array.from({ length: 2000 }, (_, i) => ({ const: i })) } } })],
  ['40 levels of nesting', () => Array.from({ length: 40 }).reduce<FuzzObject>((inner) => ({ type: 'object', properties: { x: inner } }), { type: 'string' })],
  ['an unknown type', () => ({ type: 'object', properties: { a: { type: 'strin' } } })],
  ['an unresolvable $ref', () => ({ type: 'object', properties: { a: { $ref: '#/$defs/missing' } } })],
];

interface Frame {
  readonly index: number;
  readonly detail: string;
  readonly data: string | Buffer;
  readonly binary: boolean;
  /** What the answer must be, beyond the general rules. */
  readonly expect: 'enrolled' | 'refused' | 'any';
}

function enrollCase(index: number): Frame {
  const rng = new Rng(caseSeed(SEED, index));
  const body = validEnroll(rng, index);
  const roll = rng.next();
  if (roll < 0.1) return { index, detail: 'valid', data: serialize(body), binary: false, expect: 'enrolled' };
  if (roll < 0.35) {
    const [label, make] = rng.pick(HOSTILE);
    const tools = (body.manifest as FuzzObject).tools as FuzzObject[];
    const at = rng.int(tools.length);
    (tools[at] as FuzzObject).input_schema = make();
    return { index, detail: `hostile schema at tools[${at}]: ${label}`, data: serialize(body), binary: false, expect: 'refused' };
  }
  if (roll < 0.85) {
    const m = mutateStructure(rng, body, rng.pick(STRUCTURAL));
    return { index, detail: m.detail, data: serialize(m.value), binary: false, expect: 'any' };
  }
  const text = Buffer.from(serialize(body));
  const raw = rng.int(4);
  if (raw === 0) return { index, detail: `truncated: ${truncated(rng, text).detail}`, data: truncated(rng, text).bytes.toString(), binary: false, expect: 'refused' };
  if (raw === 1) {
    const [label, make] = rng.pick(NON_OBJECTS);
    return { index, detail: `non-object: ${label}`, data: make(text.toString()), binary: false, expect: 'any' };
  }
  if (raw === 2) return { index, detail: 'binary frame', data: text, binary: true, expect: 'refused' };
  const bad = withInvalidUtf8(rng, text);
  return { index, detail: `invalid UTF-8: ${bad.detail}`, data: bad.bytes, binary: false, expect: 'any' };
}

/** The problem with how the gateway answered one enroll frame, or null. */
async function enrollProblem(joinKey: string, c: Frame): Promise<string | null> {
  const socket = await agentSocket(connectUrl(), joinKey);
  socket.ws.send(c.data, { binary: c.binary });
  const arrived = new Promise<null>((resolve) => (socket.messages.length > 0 ? resolve(null) : socket.ws.once('message', () => resolve(null))));
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), 20_000)));
  const closed = await Promise.race([arrived, socket.closed(), timeout]);
  clearTimeout(timer);
  if (closed === 'timeout') return 'no answer within 20 s';
  // The close may be seen before the message polled for: what came first is in `messages` either way.
  const first = socket.messages[0];
  if (!first) {
    // A text frame that is not UTF-8 is a WebSocket protocol error (RFC 6455 8.1): uWS drops the connection.
    const code = closed?.code ?? 0;
    return [1006, 1007].includes(code) && c.detail.startsWith('invalid UTF-8') ? null : `closed ${code} without a message`;
  }
  if (first.type === 'enrolled') {
    socket.ws.close();
    return c.expect === 'refused' ? `enrolled, expected a refusal` : null;
  }
  if (c.expect === 'enrolled') return `refused a valid enroll: ${JSON.stringify(first)}`;
  if (first.type !== 'error' || !ENROLL_ERRORS.has(String(first.code))) return `unexpected answer ${JSON.stringify(first).slice(0, 300)}`;
  if (c.expect === 'refused' && first.code !== 'exec_manifest_invalid') return `refused with ${String(first.code)}`;
  const end = await socket.closed();
  return end.code === 4400 ? null : `error then close ${end.code}, expected 4400`;
}

const RUNTIME_TYPES = ['heartbeat', 'invocation.output', 'invocation.result', 'enroll'];

function runtimeCase(index: number): Frame {
  const rng = new Rng(caseSeed(SEED ^ 0x7a11, index));
  const id = `inv_${rng.int(2 ** 30).toString(16).padStart(24, '0')}`;
  const type = rng.pick(RUNTIME_TYPES);
  const body: FuzzObject =
    type === 'invocation.output'
      ? { type, invocation_id: id, data: 'some output\n' }
      : type === 'invocation.result'
        ? { type, invocation_id: id, exit_code: rng.pick([0, 1, 137]), ...(rng.chance(0.5) ? { output: 'done', error: null } : {}) }
        : type === 'enroll'
          ? validEnroll(rng, index)
          : { type };
  if (rng.chance(0.15)) return { index, detail: `${type} as a binary frame`, data: Buffer.from(serialize(body)), binary: true, expect: 'any' };
  if (rng.chance(0.15)) return { index, detail: `${type} truncated`, data: truncated(rng, Buffer.from(serialize(body))).bytes.toString(), binary: false, expect: 'any' };
  const m = mutateStructure(rng, body, rng.pick(STRUCTURAL));
  return { index, detail: `${type}: ${m.detail}`, data: serialize(m.value), binary: false, expect: 'any' };
}

async function runBounded<T>(items: readonly T[], limit: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: limit }, async () => {
    while (next < items.length) await work(items[next++] as T);
  }));
}

const unexpectedLogLines = (): string[] => gw.stdout.join('').split('\n').filter((l) => l.includes('"unexpected error"') || l.includes('exec agent enrollment failed'));

describe(`fuzzing the agents' WebSocket frames and manifests (seed ${SEED})`, () => {
  it('answers every mutated enroll frame with enrolled, or a protocol error and close 4400', { timeout: 120_000 }, async () => {
    const joinKey = await mintJoinKey(gw.url, keys.exec);
    const cases = Array.from({ length: ENROLL_CASES }, (_, i) => enrollCase(i));
    const failures: string[] = [];
    await runBounded(cases, CONCURRENCY, async (c) => {
      const problem = await enrollProblem(joinKey, c).catch((err: unknown) => `no answer: ${(err as Error).message}`);
      if (problem) failures.push(`#${c.index} (seed ${SEED}) ${c.detail}: ${problem}`);
    });
    expect(failures.sort().slice(0, 8), `${failures.length} bad answers`).toEqual([]);
  });

  it('answers mutated runtime frames with nothing or invalid_body, keeps the connection, and still serves invocations', { timeout: 120_000 }, async () => {
    const socket = await agentSocket(connectUrl(), await mintJoinKey(gw.url, keys.exec));
    socket.send({ type: 'enroll', registration_name: 'fz-runtime', manifest: { tools: [{ name: 'rt', input_schema: richSchema(), risk: 'read' }] } });
    await socket.next('enrolled');
    const failures: string[] = [];
    for (const c of Array.from({ length: RUNTIME_CASES }, (_, i) => runtimeCase(i))) {
      socket.ws.send(c.data, { binary: c.binary });
      // A second enroll is always answered (invalid_body, no close): everything the frame caused came before it.
      socket.send({ type: 'enroll', registration_name: 'sync', manifest: { tools: [{ name: 's', input_schema: { type: 'object' }, risk: 'read' }] } });
      for (;;) {
        const m = await socket.next('error');
        if (m.code !== 'invalid_body') failures.push(`#${c.index} ${c.detail}: ${JSON.stringify(m).slice(0, 200)}`);
        if (String(m.message).startsWith('Already enrolled')) break;
      }
      if (socket.ws.readyState !== socket.ws.OPEN) failures.push(`#${c.index} ${c.detail}: closed the connection`);
      if (failures.length > 0) break;
    }
    expect(failures).toEqual([]);
    const created = await call(`${gw.url}/${PROJECT}/v1/exec/invocations`, { key: keys.exec, body: { workspace_id: WS_DEFAULT, tool_name: 'rt', arguments: { host: 'example.com', headers: { 'x-a': 'b' } } } });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const dispatch = await socket.next('invocation.dispatch');
    expect(dispatch.invocation_id).toBe((created.body as { id: string }).id);
    socket.ws.close();
  });

  it('leaves the gateway answering /healthz, with no unexpected error logged', async () => {
    expect((await fetch(`${gw.url}/healthz`)).status).toBe(200);
    expect(unexpectedLogLines().slice(0, 5)).toEqual([]);
    expect(gw.stderr.join('')).not.toMatch(/\n\s+at |Error|uncaught/i);
  });
});
