/**
 * A short, deterministic fuzz run (issues 17 and 19): about 3000 mutations of valid bodies, from a fixed
 * seed, against chat, the semantic router's chat route, key and router management, and webhooks. The
 * gateway must answer every one with a 2xx (JSON, or SSE for a stream) or the SPEC "Errors" envelope,
 * never a 5xx, finish every request (none left in flight), keep answering /healthz, log no unexpected
 * error and exit 0 on SIGTERM.
 *
 * Every case is generated from its own seed (caseSeed(SEED, index)), so FUZZ_ONLY=<index>[,<index>...]
 * replays exactly the failing bodies; FUZZ_SEED=<n> explores another set. The generic mutation engine is
 * test/helpers/json-fuzz.ts; this file (over 500 lines) keeps the route bodies, transports and answer
 * checks of the one fuzzer together, since each is read against the others.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHAT_ID, makeKeys, PLAIN_ID, PROJECT, REASONER_ID, SUSPENDED_ID, testConfig, WS_B, type TestKeys } from '../helpers/configs.js';
import {
  caseSeed,
  define,
  isPlainObject,
  Members,
  mutateStructure,
  NON_OBJECTS,
  Rng,
  serialize,
  truncated,
  withInvalidUtf8,
  WEIRD_STRINGS,
  type FuzzObject,
  type FuzzValue,
  type StructuralKind,
} from '../helpers/json-fuzz.js';
import { chunk, openRaw, readResponse, requestHead } from '../helpers/raw-http.js';
import { makeRouterKeys, R_CHAT, R_PAUSED, ROUTER_PROJECT, routerProject, WS_CONCRETE, WS_EMPTY, WS_OPS, WS_SOLO, type RouterKeys } from '../helpers/router-config.js';
import { parseSse } from '../helpers/sse.js';
import { startGatewayProcess, startSimulatorProcess, type GatewayProcess } from '../helpers/processes.js';
import { execConfig, makeExecKeys } from '../helpers/exec-config.js';
import { useProcesses } from '../helpers/suite.js';

const SEED = Number(process.env.FUZZ_SEED ?? 0x5eed_0019);
const ONLY = process.env.FUZZ_ONLY ? new Set(process.env.FUZZ_ONLY.split(',').map(Number)) : null;
/** Small enough that an oversized chat body is cheap, big enough for the 100k-character strings. */
const CHAT_CAP = 256 * 1024;
const MANAGEMENT_CAP = 16 * 1024;
const CONCURRENCY = 8;
const ANSWER_TIMEOUT_MS = 20_000;
const REQUEST_ID = /^(req_|chatcmpl-)[0-9a-f]{24}$/;

const suite = useProcesses(async () => {
  const keys = makeKeys();
  const routerKeys = makeRouterKeys();
  const sim = await startSimulatorProcess();
  // Unmetered (0) request and token ceilings: the fuzzer is about bodies, not a wall of 429s.
  const unmetered = { requests_per_minute: 0, tokens_per_minute: 0 };
  const config = testConfig(sim.url, keys, {
    server: { max_body_bytes: CHAT_CAP },
    limits: { management_requests_per_minute: 0 },
    rateLimit: unmetered,
    extraProjects: [{ ...routerProject(sim.url, routerKeys), rate_limit: unmetered }],
  });
  const gw = await startGatewayProcess(config);
  return { sim, gw, keys, routerKeys };
});

// ---------------------------------------------------------------------------------------------------
// Valid bodies, one generator per route. Every optional field is sometimes present, so mutations reach it.

/** A function, not a constant: mutations edit bodies in place, and one case must not edit the next. */
const tool = (): FuzzObject => ({
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'Weather for a city',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
    strict: false,
  },
});
const QUERIES = ['compute the derivative of sin x', 'recommend a recipe for dinner tonight', 'plan a weekend trip to lisbon', 'hello there', 'describe this photo'];

interface Caps {
  readonly tools: boolean;
  readonly structured: boolean;
  readonly reasoning: boolean;
}

function conversation(rng: Rng, caps: Caps): FuzzValue[] {
  const query = rng.pick(QUERIES);
  const messages: FuzzValue[] = [];
  if (rng.chance(0.3)) messages.push({ role: rng.pick(['system', 'developer']), content: 'You are terse.' });
  messages.push({ role: 'user', content: rng.chance(0.7) ? query : [{ type: 'text', text: query }] });
  if (caps.tools && rng.chance(0.25)) {
    messages.push(
      { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }] },
      { role: 'tool', tool_call_id: 'call_1', content: '{"temp": 21}' },
    );
  } else if (rng.chance(0.3)) {
    messages.push({ role: 'assistant', content: 'Sure.', name: 'helper' }, { role: 'user', content: 'go on' });
  }
  return messages;
}

function chatBody(rng: Rng, caps: Caps): FuzzObject {
  const body: FuzzObject = { model: rng.pick(['client-model', 'gpt-4o', 'm']), messages: conversation(rng, caps) };
  const maybe = (p: number, key: string, make: () => FuzzValue): void => {
    if (rng.chance(p)) body[key] = make();
  };
  const stream = rng.chance(0.08);
  if (stream) {
    body.stream = true;
    maybe(0.5, 'stream_options', () => ({ include_usage: rng.chance(0.5) }));
  } else {
    maybe(0.1, 'stream', () => rng.pick([false, null]));
    maybe(0.2, 'n', () => rng.between(1, 3));
  }
  maybe(0.3, rng.pick(['max_tokens', 'max_completion_tokens']), () => rng.between(1, 64));
  maybe(0.3, 'temperature', () => rng.int(21) / 10);
  maybe(0.2, 'top_p', () => rng.int(11) / 10);
  maybe(0.15, 'stop', () => rng.pick<FuzzValue>(['\n\n', ['END', 'STOP']]));
  maybe(0.15, 'frequency_penalty', () => rng.int(41) / 10 - 2);
  maybe(0.15, 'presence_penalty', () => rng.int(41) / 10 - 2);
  maybe(0.1, 'top_k', () => rng.int(50));
  maybe(0.1, 'min_p', () => rng.int(11) / 10);
  maybe(0.1, 'repetition_penalty', () => 1.1);
  maybe(0.2, 'seed', () => rng.int(1_000_000));
  if (rng.chance(0.15)) {
    body.logprobs = true;
    maybe(0.5, 'top_logprobs', () => rng.int(6));
  }
  maybe(0.1, 'logit_bias', () => ({ '50256': -100, '42': 3.5 }));
  if (caps.tools && rng.chance(0.3)) {
    body.tools = [tool()];
    maybe(0.5, 'tool_choice', () => rng.pick<FuzzValue>(['auto', 'none', 'required', { type: 'function', function: { name: 'get_weather' } }]));
    maybe(0.3, 'parallel_tool_calls', () => rng.chance(0.5));
  }
  const formats: FuzzValue[] = caps.structured
    ? [{ type: 'text' }, { type: 'json_object' }, { type: 'json_schema', json_schema: { name: 'answer', schema: { type: 'object', properties: { a: { type: 'string' } } }, strict: true } }]
    : [{ type: 'text' }];
  maybe(0.15, 'response_format', () => rng.pick(formats));
  maybe(0.15, 'metadata', () => ({ team: 'fuzz', run: String(rng.int(100)) }));
  maybe(0.15, 'user', () => `user-${rng.int(100)}`);
  maybe(0.1, 'store', () => rng.chance(0.5));
  maybe(0.15, 'service_tier', () => rng.pick(['auto', 'default', 'flex', 'scale', 'priority', 'turbo']));
  maybe(0.1, 'prediction', () => ({ type: 'content', content: rng.pick<FuzzValue>(['Sure.', [{ type: 'text', text: 'Sure.' }]]) }));
  maybe(0.1, 'modalities', () => ['text']);
  if (caps.reasoning) {
    if (rng.chance(0.4)) body.reasoning_effort = rng.pick(['low', 'medium', 'high', 'minimal', 'xhigh', 'max']);
    else maybe(0.4, 'reasoning', () => ({ effort: 'low', max_tokens: rng.between(1, 64), exclude: rng.chance(0.5) }));
    maybe(0.2, 'include_reasoning', () => rng.chance(0.5));
  }
  return body;
}

const PNG = 'data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==';
/** Content parts of every type, well-formed and not. Image URLs are data: or private literals: never the network. */
const PARTS: readonly (() => FuzzValue)[] = [
  () => ({ type: 'text', text: 'hello' }),
  () => ({ type: 'text' }),
  () => ({ type: 'text', text: 5 }),
  () => ({ type: 'text', text: '\ud800\u0000' }),
  () => ({ type: 'image_url', image_url: { url: PNG, detail: 'high' } }),
  () => ({ type: 'image_url', image_url: { url: 'data:image/png;base64,!!!not base64' } }),
  () => ({ type: 'image_url', image_url: { url: 'data:text/plain,hello' } }),
  () => ({ type: 'image_url', image_url: { url: 'https://127.0.0.1/cat.png' } }),
  () => ({ type: 'image_url', image_url: { url: 'http://[::1]:1/x.png' } }),
  () => ({ type: 'image_url', image_url: { url: 'javascript:alert(1)' } }),
  () => ({ type: 'image_url', image_url: PNG }),
  () => ({ type: 'image_url', image_url: { detail: 'low' } }),
  () => ({ type: 'input_audio', input_audio: { data: 'UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAIA+AAACABAAZGF0YQAAAAA=', format: 'wav' } }),
  () => ({ type: 'input_audio', input_audio: { data: 'not base64!!', format: 'mp3' } }),
  () => ({ type: 'input_audio', input_audio: { data: '', format: '' } }),
  () => ({ type: 'video_url', video_url: { url: 'data:video/mp4;base64,AAAAIGZ0eXA=' } }),
  () => ({ type: 'refusal', refusal: 'I cannot help with that.' }),
  () => ({ type: 'file', file: { file_id: 'file-1' } }),
  () => ({ type: 'TEXT', text: 'x' }),
  () => ({}),
  () => null,
  () => 'a bare string part',
  () => 42,
  () => [],
];
const ROLES = ['system', 'user', 'assistant', 'tool', 'developer', 'function', 'USER', '', 'moderator'];

/** A message of any role with odd content: the "every role and weird content parts" mutation. */
function oddMessage(rng: Rng): FuzzValue {
  const m: FuzzObject = {};
  if (rng.chance(0.95)) m.role = rng.pick(ROLES);
  const content = rng.int(6);
  if (content === 0) m.content = rng.pick(WEIRD_STRINGS);
  else if (content === 1) m.content = null;
  else if (content === 2) m.content = 'plain text';
  else if (content < 5) m.content = Array.from({ length: rng.between(1, 4) }, () => rng.pick(PARTS)());
  if (rng.chance(0.2)) m.name = rng.pick(['bob', '', 'x'.repeat(300)]);
  if (rng.chance(0.25)) m.tool_call_id = rng.pick<FuzzValue>(['call_1', '', 7]);
  if (rng.chance(0.2)) m.tool_calls = rng.pick<FuzzValue>([[{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{}' } }], [{ id: 'c', type: 'custom' }], [], 'call']);
  if (rng.chance(0.1)) m.refusal = 'no';
  if (rng.chance(0.05)) m.function_call = { name: 'f', arguments: '{}' };
  return m;
}

function apiKeyBody(rng: Rng, index: number): FuzzObject {
  const body: FuzzObject = {};
  const scopes = rng.pick([['inference'], ['inference', 'execution'], ['management'], ['inference', 'management'], ['research']]);
  if (rng.chance(0.6)) body.name = `fuzz key ${index}`;
  if (rng.chance(0.7)) body.scopes = scopes;
  if (rng.chance(0.3)) body.allowed_ips = ['127.0.0.1', '10.0.0.0/8', '::1'];
  if (rng.chance(0.2)) body.blocked_ips = ['192.0.2.1'];
  if (rng.chance(0.3)) body.expires_at = rng.pick<FuzzValue>(['2099-01-01T00:00:00Z', 4102444800]);
  if (rng.chance(0.3)) body.quota_requests = rng.int(1000);
  if (rng.chance(0.3)) body.quota_window = rng.between(1, 3600);
  if (rng.chance(0.2)) body.endpoint_id = CHAT_ID;
  if (rng.chance(0.2) && !(body.scopes === scopes && scopes.includes('management'))) body.allowed_workspace_ids = [WS_B];
  return body;
}

const RULE_TARGETS = [CHAT_ID, REASONER_ID, PLAIN_ID, SUSPENDED_ID];

function flatRule(rng: Rng): FuzzObject {
  const rule: FuzzObject = { endpoint_id: rng.pick(RULE_TARGETS) };
  if (rng.chance(0.7)) rule.name = `rule ${rng.int(100)}`;
  rule.query_contains = ['weather', 'forecast', 'derivative'].slice(0, rng.between(1, 3));
  if (rng.chance(0.3)) rule.min_input_tokens = rng.between(1, 5000);
  if (rng.chance(0.3)) rule.exact_request_model = 'client-exact';
  if (rng.chance(0.3)) rule.fallback_to_classification = rng.chance(0.5);
  if (rng.chance(0.3)) rule.priority = rng.between(-10, 10);
  if (rng.chance(0.3)) rule.enabled = rng.chance(0.5);
  return rule;
}

function nestedRule(rng: Rng): FuzzObject {
  const flat = flatRule(rng);
  const { query_contains, min_input_tokens, exact_request_model, endpoint_id, fallback_to_classification, ...rest } = flat;
  const match: FuzzObject = { query_contains: query_contains ?? [] };
  if (min_input_tokens !== undefined) match.min_input_tokens = min_input_tokens;
  if (exact_request_model !== undefined) match.exact_request_model = exact_request_model;
  const action: FuzzObject = { endpoint_id: endpoint_id ?? CHAT_ID };
  if (fallback_to_classification !== undefined) action.fallback_to_classification = fallback_to_classification;
  return { ...rest, match, action };
}

function routerConfigBody(rng: Rng): FuzzObject {
  const body: FuzzObject = {};
  const maybe = (key: string, make: () => FuzzValue): void => {
    if (rng.chance(0.4)) body[key] = make();
  };
  maybe('semantic_router_enabled', () => rng.pick<FuzzValue>([true, false, null]));
  maybe('semantic_router_multi_model_enabled', () => rng.chance(0.5));
  maybe('semantic_router_similarity_floor', () => rng.int(101) / 100);
  maybe('semantic_router_switch_margin', () => rng.int(101) / 100);
  maybe('semantic_router_proximity_bonus', () => rng.pick<FuzzValue>([0, 0.02, 1, null]));
  maybe('semantic_router_fallback_endpoint_id', () => rng.pick<FuzzValue>([CHAT_ID, null]));
  maybe('semantic_router_excluded_endpoint_ids', () => rng.pick<FuzzValue>([[PLAIN_ID], [], null]));
  maybe('semantic_router_dynamic_rules', () => Array.from({ length: rng.int(4) }, () => (rng.chance(0.5) ? flatRule(rng) : nestedRule(rng))));
  if (Object.keys(body).length === 0) body.semantic_router_similarity_floor = 0.5;
  return body;
}

const EVENTS = ['exec.completed', 'exec.failed', 'batch.completed', 'exec.ambiguous'];

function webhookBody(rng: Rng, create: boolean): FuzzObject {
  const body: FuzzObject = {};
  // A public address literal: valid without DNS, and nothing is ever delivered (no event is emitted).
  if (create || rng.chance(0.4)) body.url = `https://93.184.216.34/hooks/${rng.int(1000)}`;
  if (create || rng.chance(0.4)) body.events = EVENTS.slice(0, rng.between(1, EVENTS.length));
  if (rng.chance(0.4)) body.description = rng.pick<FuzzValue>(['fuzzed endpoint', create ? 'x' : null]);
  if (!create && rng.chance(0.4)) body.is_active = rng.chance(0.5);
  if (rng.chance(0.3)) body.metadata = { team: 'fuzz' };
  return body;
}

// ---------------------------------------------------------------------------------------------------
// Cases: a route, a valid body, one mutation, one way of sending it.

type RouteName = 'chat' | 'router-chat' | 'api-keys' | 'router-config' | 'router-rules' | 'webhook-create' | 'webhook-update';
type Kind = 'valid' | StructuralKind | 'truncate' | 'invalid_utf8' | 'empty' | 'non_object' | 'content_type' | 'roles';
type Transport = 'fetch' | 'chunked' | 'oversize' | 'oversize-chunked' | 'short-close';

interface FuzzCase {
  readonly index: number;
  readonly route: RouteName;
  readonly kind: Kind;
  readonly transport: Transport;
  readonly detail: string;
  readonly method: string;
  readonly path: string;
  readonly headers: Record<string, string>;
  /** null: no body at all (no Content-Length either). */
  readonly body: Buffer | null;
  /** Valid bodies must be served; a few refusals are legitimate because of state (per-project caps). */
  readonly mustSucceed: boolean;
  readonly allowedRefusals: readonly string[];
  /** Oversized bodies to a valid target must get 413 (an unknown workspace may be refused before the body is read). */
  readonly oversizeIs413: boolean;
  /** Chunk sizes for the raw-socket transports. */
  readonly pieces: readonly number[];
}

interface Fixture {
  readonly keys: TestKeys;
  readonly routerKeys: RouterKeys;
  readonly webhookId: string;
}

const COUNTS: Record<RouteName, number> = {
  chat: 1150,
  'router-chat': 600,
  'api-keys': 300,
  'router-config': 250,
  'router-rules': 250,
  'webhook-create': 200,
  'webhook-update': 250,
};

const KIND_WEIGHTS: readonly (readonly [Kind, number])[] = [
  ['valid', 9],
  ['drop', 10],
  ['retype', 20],
  ['weird_string', 9],
  ['extra_field', 7],
  ['duplicate_key', 6],
  ['deep_nesting', 5],
  ['truncate', 5],
  ['invalid_utf8', 5],
  ['empty', 2],
  ['non_object', 3],
  ['content_type', 3],
];
const STRUCTURAL: ReadonlySet<Kind> = new Set<StructuralKind>(['drop', 'retype', 'weird_string', 'extra_field', 'duplicate_key', 'deep_nesting']);
const isStructural = (kind: Kind): kind is StructuralKind => STRUCTURAL.has(kind);
const CHAT_KIND_WEIGHTS: readonly (readonly [Kind, number])[] = [...KIND_WEIGHTS, ['roles', 12]];
const WRONG_CONTENT_TYPES = ['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=xyz', 'application/json; charset=latin1', 'application/xml', ''];
const CHAT_HEADERS: readonly (readonly [string, string])[] = [
  ['x-service-augment-max-output-tokens-clamp', 'on'],
  ['x-service-augment-reasoning-normalization', 'yes'],
  ['x-service-augment', 'on'],
  ['x-service-augment-compaction', 'maybe'],
  ['x-slo-ttft-ms', '-5'],
  ['x-service-compression', 'off'],
];

/** The routes in a fixed shuffled order, so concurrent requests mix families. */
function schedule(seed: number): RouteName[] {
  const order = (Object.keys(COUNTS) as RouteName[]).flatMap((route) => Array.from({ length: COUNTS[route] }, () => route));
  const rng = new Rng(seed);
  for (let i = order.length - 1; i > 0; i--) {
    const j = rng.int(i + 1);
    [order[i], order[j]] = [order[j] as RouteName, order[i] as RouteName];
  }
  return order;
}

interface Target {
  readonly method: string;
  readonly path: string;
  readonly key: string;
  readonly body: FuzzObject;
  readonly cap: number;
  readonly mustSucceed: boolean;
  readonly allowedRefusals: readonly string[];
  readonly headers: Record<string, string>;
}

function target(route: RouteName, rng: Rng, index: number, fx: Fixture): Target {
  const mgmt = { key: fx.keys.full, cap: MANAGEMENT_CAP, headers: {}, allowedRefusals: [] as string[] };
  switch (route) {
    case 'chat': {
      const slug = rng.weighted([['chat', 6], ['reasoner', 2], ['plain', 1], ['small', 1]] as const);
      const caps: Caps = { tools: slug !== 'plain', structured: slug === 'chat', reasoning: slug === 'reasoner' };
      // The 256-token endpoint gets the smallest valid body: anything more may not fit its window.
      const body = slug === 'small' ? { model: 'm', messages: [{ role: 'user', content: 'hi' }], max_tokens: 16 } : chatBody(rng, caps);
      const headers: Record<string, string> = rng.chance(0.1) ? Object.fromEntries([rng.pick(CHAT_HEADERS)]) : {};
      return { method: 'POST', path: `/${PROJECT}/${slug}/v1/chat/completions`, key: fx.keys.full, body, cap: CHAT_CAP, mustSucceed: true, allowedRefusals: [], headers };
    }
    case 'router-chat': {
      const workspace = rng.weighted([['', 14], [WS_SOLO, 2], [WS_CONCRETE, 1], [WS_EMPTY, 1], [WS_OPS, 1], ['ws_ffffff', 1]] as const);
      const body = chatBody(rng, { tools: rng.chance(0.5), structured: true, reasoning: false });
      // Rules of the fixture: "sonnet" goes to a suspended endpoint without fallback (404), 'client-exact' to chat.
      if (rng.chance(0.05)) body.messages = [{ role: 'user', content: 'write a sonnet about the sea' }];
      if (rng.chance(0.05)) body.model = 'client-exact';
      const headers: Record<string, string> = rng.chance(0.2) ? { 'x-conversation-id': `conv-${rng.int(3)}` } : {};
      const path = `/${ROUTER_PROJECT}${workspace ? `/${workspace}` : ''}/_semantic/router/v1/chat/completions`;
      return { method: 'POST', path, key: fx.routerKeys.full, body, cap: CHAT_CAP, mustSucceed: workspace === '', allowedRefusals: ['rule_endpoint_not_found'], headers };
    }
    case 'api-keys':
      return { ...mgmt, method: 'POST', path: `/${PROJECT}/v1/management/api-keys`, body: apiKeyBody(rng, index), mustSucceed: true };
    case 'router-config':
      return { ...mgmt, method: 'PATCH', path: `/${PROJECT}/v1/management/semantic-router/config`, body: routerConfigBody(rng), mustSucceed: true };
    case 'router-rules':
      // At most 20 rules per project: past that a valid rule is refused until a config PATCH replaces them.
      return { ...mgmt, method: 'POST', path: `/${PROJECT}/v1/management/semantic-router/rules`, body: flatRule(rng), mustSucceed: true, allowedRefusals: ['invalid_semantic_router_config'] };
    case 'webhook-create':
      return { ...mgmt, method: 'POST', path: `/${PROJECT}/v1/webhooks`, body: webhookBody(rng, true), mustSucceed: true, allowedRefusals: ['webhook_limit_reached'] };
    case 'webhook-update': {
      const id = rng.chance(0.9) ? fx.webhookId : rng.pick(['00000000-0000-4000-8000-000000000000', '%E2%80%AE', 'x'.repeat(300)]);
      return { ...mgmt, method: 'PUT', path: `/${PROJECT}/v1/webhooks/${id}`, body: webhookBody(rng, false), mustSucceed: id === fx.webhookId };
    }
  }
}

/** The simulator reads a top-level `sim` object as failure knobs: no case may carry one. */
function withoutSim(value: FuzzValue): FuzzValue {
  if (isPlainObject(value)) Reflect.deleteProperty(value, 'sim');
  if (value instanceof Members) return new Members(value.entries.filter(([k]) => k !== 'sim'));
  return value;
}

function makeCase(index: number, route: RouteName, fx: Fixture): FuzzCase {
  const rng = new Rng(caseSeed(SEED, index));
  const t = target(route, rng, index, fx);
  const chatLike = route === 'chat' || route === 'router-chat';
  const roll = rng.next();
  const transport: Transport = roll < 0.015 ? 'short-close' : roll < 0.03 ? 'oversize' : roll < 0.04 ? 'oversize-chunked' : roll < 0.11 ? 'chunked' : 'fetch';
  const oversized = transport === 'oversize' || transport === 'oversize-chunked';
  const kind: Kind = oversized ? 'valid' : rng.weighted(chatLike ? CHAT_KIND_WEIGHTS : KIND_WEIGHTS);
  const headers: Record<string, string> = { authorization: `Bearer ${t.key}`, 'content-type': 'application/json', ...t.headers };
  let value: FuzzValue = t.body;
  let detail = 'unchanged';
  if (kind === 'roles') {
    t.body.messages = Array.from({ length: rng.between(1, 6) }, () => oddMessage(rng));
    detail = 'messages of odd roles and content parts';
  } else if (isStructural(kind)) {
    ({ value, detail } = mutateStructure(rng, value, kind));
  }
  if (oversized) {
    // Past the route's cap by up to 64 KiB, in a field of its own so the rest stays valid.
    const size = t.cap + rng.between(1, 64 * 1024);
    define(t.body, 'padding', '');
    const bare = Buffer.byteLength(serialize(t.body));
    define(t.body, 'padding', 'p'.repeat(Math.max(0, size - bare)));
    detail = `padded to ${size} bytes (cap ${t.cap})`;
  }
  const text = Buffer.from(serialize(withoutSim(value)));
  let body: Buffer | null = text;
  if (kind === 'truncate') ({ bytes: body, detail } = truncated(rng, text));
  else if (kind === 'invalid_utf8') ({ bytes: body, detail } = withInvalidUtf8(rng, text));
  else if (kind === 'empty') {
    body = rng.chance(0.5) ? Buffer.alloc(0) : null;
    detail = body ? 'Content-Length: 0' : 'no body at all';
  } else if (kind === 'non_object') {
    const [label, make] = rng.pick(NON_OBJECTS);
    body = Buffer.from(make(text.toString()));
    detail = label;
  } else if (kind === 'content_type') {
    const type = rng.pick(WRONG_CONTENT_TYPES);
    if (type) headers['content-type'] = type;
    else Reflect.deleteProperty(headers, 'content-type');
    detail = `Content-Type: ${type || '(none)'}`;
  }
  const pieces: number[] = [];
  for (let sent = 0; body && sent < body.length; ) {
    const size = rng.chance(0.2) ? rng.between(1, 16) : rng.between(17, 16 * 1024);
    pieces.push(size);
    sent += size;
  }
  // SPEC says nothing of Content-Type, so a valid body under a wrong one may be served or refused.
  const mustSucceed = t.mustSucceed && kind === 'valid' && !oversized && transport !== 'short-close';
  return { index, route, kind, transport, detail, method: t.method, path: t.path, headers, body, mustSucceed, allowedRefusals: t.allowedRefusals, oversizeIs413: t.mustSucceed, pieces };
}

// ---------------------------------------------------------------------------------------------------
// Sending, and what a good answer looks like.

interface Answer {
  readonly status: number;
  readonly headers: Record<string, string>;
  readonly body: string;
}

async function viaFetch(base: string, c: FuzzCase): Promise<Answer> {
  const res = await fetch(`${base}${c.path}`, { method: c.method, headers: c.headers, body: c.body ? new Uint8Array(c.body) : undefined, signal: AbortSignal.timeout(ANSWER_TIMEOUT_MS) });
  return { status: res.status, headers: Object.fromEntries(res.headers), body: await res.text() };
}

/** Transfer-Encoding: chunked over a raw socket, in the case's piece sizes. */
async function viaChunked(base: string, c: FuzzCase, finish: boolean): Promise<Answer | null> {
  const raw = await openRaw(base);
  try {
    await raw.write(requestHead(c.method, c.path, { ...c.headers, 'transfer-encoding': 'chunked' }));
    const body = c.body ?? Buffer.alloc(0);
    let at = 0;
    for (const size of c.pieces) {
      if (!finish && at + size >= body.length) break;
      if (!(await raw.write(chunk(body.subarray(at, at + size))))) break;
      at += size;
    }
    if (!finish) {
      // Give the gateway time to start on the request, so the close lands mid-read, not before it.
      await new Promise((r) => setTimeout(r, 10));
      return null;
    }
    await raw.write('0\r\n\r\n');
    const res = await readResponse(raw, ANSWER_TIMEOUT_MS);
    return { status: res.status, headers: res.headers, body: res.body };
  } finally {
    raw.socket.destroy();
  }
}

/** A Content-Length larger than what is sent, then the socket closed (or a chunked body never ended). */
async function shortThenClose(base: string, c: FuzzCase): Promise<null> {
  if (c.index % 2 === 0) return viaChunked(base, c, false) as Promise<null>;
  const raw = await openRaw(base);
  const body = c.body ?? Buffer.alloc(0);
  await raw.write(requestHead(c.method, c.path, { ...c.headers, 'content-length': String(body.length + 1 + (c.pieces[0] ?? 0)) }));
  await raw.write(body.subarray(0, Math.floor(body.length / 2)));
  // Give the gateway time to start on the request, so the close lands mid-read, not before it.
  await new Promise((r) => setTimeout(r, 10));
  raw.socket.destroy();
  return null;
}

async function send(base: string, c: FuzzCase): Promise<Answer | null> {
  switch (c.transport) {
    case 'fetch':
    case 'oversize':
      return viaFetch(base, c);
    case 'chunked':
    case 'oversize-chunked':
      return viaChunked(base, c, true);
    case 'short-close':
      return shortThenClose(base, c);
  }
}

const ENVELOPE_FIELDS = ['message', 'type', 'code', 'param'];
/** SPEC "Errors": 429s add retry_after and retry_strategy inside `error`. */
const RATE_LIMIT_FIELDS = ['retry_after', 'retry_strategy'];

function parseJson(text: string): { ok: true; value: unknown } | { ok: false } {
  try {
    return { ok: true, value: JSON.parse(text) as unknown };
  } catch {
    return { ok: false };
  }
}

/** What is wrong with an error envelope, or null. */
function envelopeProblem(value: unknown, status: number): string | null {
  if (!isRecord(value) || Object.keys(value).join() !== 'error') return 'the body is not exactly {error: {...}}';
  const error = value.error;
  if (!isRecord(error)) return 'error is not an object';
  const allowed = status === 429 ? [...ENVELOPE_FIELDS, ...RATE_LIMIT_FIELDS] : ENVELOPE_FIELDS;
  const extra = Object.keys(error).filter((k) => !allowed.includes(k));
  if (extra.length > 0) return `error has fields outside the envelope: ${extra.join(', ')}`;
  const missing = ENVELOPE_FIELDS.filter((k) => !Object.hasOwn(error, k));
  if (missing.length > 0) return `error lacks ${missing.join(', ')}`;
  if (typeof error.message !== 'string' || error.message.length === 0) return 'error.message is not a non-empty string';
  if (typeof error.type !== 'string' || typeof error.code !== 'string') return 'error.type or error.code is not a string';
  if (error.param !== null && typeof error.param !== 'string') return 'error.param is neither a string nor null';
  return null;
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function sseProblem(text: string): string | null {
  const frames = parseSse(text);
  if (frames.at(-1)?.data !== '[DONE]') return 'the stream does not end with [DONE]';
  for (const frame of frames.slice(0, -1)) {
    const parsed = parseJson(frame.data);
    if (!parsed.ok) return `a frame is not JSON: ${frame.data.slice(0, 100)}`;
    if (isRecord(parsed.value) && 'error' in parsed.value) {
      const problem = envelopeProblem(parsed.value, 200);
      if (problem) return `an error frame: ${problem}`;
      if ((parsed.value.error as Record<string, unknown>).code === 'internal_error') return 'an internal_error frame';
    }
  }
  return null;
}

function answerProblem(c: FuzzCase, a: Answer): string | null {
  if (a.status >= 500) return `a ${a.status}: a server error`;
  if (!REQUEST_ID.test(a.headers['x-request-id'] ?? '')) return `X-Request-ID is missing or malformed (${a.headers['x-request-id']})`;
  const type = a.headers['content-type'] ?? '';
  if (a.status >= 200 && a.status < 300) {
    if (c.transport === 'oversize' || c.transport === 'oversize-chunked') return 'an oversized body was accepted';
    if (type.startsWith('text/event-stream')) return sseProblem(a.body);
    const parsed = parseJson(a.body);
    if (!type.startsWith('application/json') || !parsed.ok) return `a ${a.status} that is not JSON (${type})`;
    if (c.route === 'chat' || c.route === 'router-chat') {
      const v = parsed.value;
      if (!isRecord(v) || v.object !== 'chat.completion' || v.id !== a.headers['x-request-id']) return 'a 200 that is not a chat.completion with id = X-Request-ID';
    }
    return null;
  }
  const parsed = parseJson(a.body);
  if (!type.startsWith('application/json') || !parsed.ok) return `a ${a.status} that is not JSON (${type})`;
  const problem = envelopeProblem(parsed.value, a.status);
  if (problem) return problem;
  const code = ((parsed.value as { error: Record<string, unknown> }).error.code as string) ?? '';
  if ((c.transport === 'oversize' || c.transport === 'oversize-chunked') && c.oversizeIs413 && (a.status !== 413 || code !== 'payload_too_large')) {
    return `an oversized body got ${a.status} ${code}, not 413 payload_too_large`;
  }
  if (c.mustSucceed && !c.allowedRefusals.includes(code)) return `a valid body was refused with ${a.status} ${code}`;
  return null;
}

/** The start and end of a body, with control and invalid bytes visible. */
function preview(bytes: Buffer | string | null, max = 600): string {
  if (bytes === null) return '(no body)';
  const text = Buffer.isBuffer(bytes) ? bytes.toString('latin1') : bytes;
  const shown = text.length > max ? `${text.slice(0, max - 150)} ...[${text.length - max} more]... ${text.slice(-150)}` : text;
  return `${Buffer.isBuffer(bytes) ? bytes.length : Buffer.byteLength(text)} bytes: ${JSON.stringify(shown)}`;
}

interface Failure {
  readonly c: FuzzCase;
  readonly problem: string;
  readonly answer: Answer | null;
}

/** What the gateway logged as unexpected for a request: the error and the top of its stack. */
function serverSide(requestId: string | undefined): string | null {
  if (!requestId) return null;
  const line = unexpectedLogLines().find((l) => l.includes(requestId));
  if (!line) return null;
  const err = (JSON.parse(line) as { err?: { stack?: string } }).err;
  return (err?.stack ?? line).split('\n').slice(0, 4).join(' | ');
}

function report({ c, problem, answer: a }: Failure): string {
  const headers = Object.entries(c.headers)
    .filter(([k]) => k !== 'authorization')
    .map(([k, v]) => `${k}: ${v}`)
    .join('; ');
  return [
    `#${c.index} (seed ${SEED}) ${c.route} ${c.method} ${c.path} via ${c.transport}, mutation ${c.kind}: ${c.detail}`,
    `  problem: ${problem}`,
    `  request headers: ${headers || '(none)'}`,
    `  request body: ${preview(c.body)}`,
    a ? `  answer: ${a.status} x-request-id=${a.headers['x-request-id']} content-type=${a.headers['content-type']} ${preview(a.body, 800)}` : '  answer: none',
    `  gateway log: ${serverSide(a?.headers['x-request-id']) ?? '(nothing unexpected)'}`,
    `  reproduce: FUZZ_ONLY=${c.index} SWITCHBOARD_SKIP_BUILD=1 npx vitest run test/reliability/fuzz.test.ts`,
  ].join('\n');
}

async function runBounded<T>(items: readonly T[], limit: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: limit }, async () => {
      while (next < items.length) await work(items[next++] as T);
    }),
  );
}

function tally<K extends string>(cases: readonly FuzzCase[], key: (c: FuzzCase) => K): Record<string, number> {
  const out: Record<string, number> = {};
  for (const c of cases) out[key(c)] = (out[key(c)] ?? 0) + 1;
  return out;
}

// ---------------------------------------------------------------------------------------------------

async function post(url: string, key: string, body: object): Promise<Record<string, unknown>> {
  const res = await fetch(url, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const json = (await res.json()) as Record<string, unknown>;
  if (res.status !== 201) throw new Error(`fixture setup failed: ${res.status} ${JSON.stringify(json)}`);
  return json;
}

/** The webhook PUTs target, and router rules so routed turns also go through rule matching. */
async function fixture(): Promise<Fixture> {
  const { gw, keys, routerKeys } = suite;
  const hook = await post(`${gw.url}/${PROJECT}/v1/webhooks`, keys.full, { url: 'https://93.184.216.34/hooks/put-target', events: ['exec.completed'] });
  const rules = `${gw.url}/${ROUTER_PROJECT}/v1/management/semantic-router/rules`;
  await post(rules, routerKeys.full, { name: 'sonnets', query_contains: ['sonnet'], endpoint_id: R_PAUSED, fallback_to_classification: false });
  await post(rules, routerKeys.full, { name: 'exact', exact_request_model: 'client-exact', endpoint_id: R_CHAT, priority: 5 });
  await post(rules, routerKeys.full, { name: 'long', min_input_tokens: 3000, endpoint_id: R_CHAT });
  return { keys, routerKeys, webhookId: String(hook.id) };
}

/** Waits until the gateway has logged a request made now, so everything logged before it has arrived too. */
async function logsCaughtUp(): Promise<void> {
  const res = await fetch(`${suite.gw.url}/healthz`);
  const id = res.headers.get('x-request-id') ?? '';
  for (const until = Date.now() + 3000; Date.now() < until && !suite.gw.stdout.join('').includes(id); ) await new Promise((r) => setTimeout(r, 20));
}

/** Unexpected exceptions the gateway logged (with their stacks), from the `from`th line of its stdout on. */
function unexpectedLogLines(from = 0): string[] {
  return suite.gw.stdout
    .join('')
    .split('\n')
    .slice(from)
    .filter((l) => l.includes('"unexpected error"') || l.includes('must not be accessed'));
}

describe(`fuzzing request bodies (seed ${SEED})`, () => {
  it('answers every mutated body with a 2xx or the error envelope, never a 5xx, and serves every valid one', { timeout: 180_000 }, async () => {
    const fx = await fixture();
    const routes = schedule(SEED);
    const cases = routes.map((route, i) => ({ route, i })).filter(({ i }) => !ONLY || ONLY.has(i)).map(({ route, i }) => makeCase(i, route, fx));
    const failures: Failure[] = [];
    const statuses: Record<string, number> = {};
    const started = performance.now();
    await runBounded(cases, CONCURRENCY, async (c) => {
      let answer: Answer | null = null;
      try {
        answer = await send(suite.gw.url, c);
      } catch (err) {
        failures.push({ c, problem: `no answer: ${(err as Error).message}`, answer: null });
        return;
      }
      const status = answer ? String(answer.status) : 'none (closed)';
      statuses[status] = (statuses[status] ?? 0) + 1;
      const problem = answer ? answerProblem(c, answer) : null;
      if (problem) failures.push({ c, problem, answer });
    });
    const seconds = ((performance.now() - started) / 1000).toFixed(1);
    console.log(
      `fuzz: ${cases.length} requests in ${seconds} s (seed ${SEED}, ${CONCURRENCY} at a time)\n` +
        `  by route: ${JSON.stringify(tally(cases, (c) => c.route))}\n` +
        `  by mutation: ${JSON.stringify(tally(cases, (c) => c.kind))}\n` +
        `  by transport: ${JSON.stringify(tally(cases, (c) => c.transport))}\n` +
        `  answers: ${JSON.stringify(statuses)}`,
    );
    await logsCaughtUp();
    const reports = failures.sort((a, b) => a.c.index - b.c.index).map(report);
    expect(failures.length, `${failures.length} bad answers; the first ones:\n\n${reports.slice(0, 8).join('\n\n')}`).toBe(0);
  });

  it('leaves the gateway alive, answering /healthz, with no unexpected error logged', async () => {
    const res = await fetch(`${suite.gw.url}/healthz`);
    expect(res.status).toBe(200);
    await logsCaughtUp();
    expect(unexpectedLogLines().slice(0, 5)).toEqual([]);
    // A stack trace or an uncaught error on stderr means something escaped the request handlers.
    expect(suite.gw.stderr.join('')).not.toMatch(/\n\s+at |Error|uncaught/i);
  });

  it('finishes every request, including those whose client left mid-body: none stays in flight', async () => {
    // Regression: a buffered body whose client closed before its end was awaited forever, so the request
    // never finished (in-flight gauge stuck, no request log line, every SIGTERM waited out drain_timeout_ms).
    let stuck: string[] = [];
    for (const until = Date.now() + 3000; Date.now() < until; await new Promise((r) => setTimeout(r, 100))) {
      const text = await (await fetch(`${suite.gw.url}/metrics`)).text();
      stuck = text.split('\n').filter((l) => l.startsWith('switchboard_requests_in_flight{') && !l.includes('family="ops"') && !/ 0$/.test(l));
      if (stuck.length === 0) break;
    }
    expect(stuck).toEqual([]);
  });

  it('exits 0 on SIGTERM after the run, without an error on the way out', async () => {
    const before = suite.gw.stdout.join('').split('\n').length - 1;
    expect(await suite.gw.stop('SIGTERM')).toBe(0);
    expect(unexpectedLogLines(before)).toEqual([]);
    expect(suite.gw.stderr.join('')).not.toMatch(/\n\s+at |Error|uncaught/i);
  });
});

// ---------------------------------------------------------------------------------------------------
// MCP request bodies (issue 31): JSON-RPC messages and batches to `/{project}/v1/mcp`, mutated the same
// way, on a gateway of their own (the suite's gateway is stopped by the test above). Every answer is a
// 2xx (an SSE stream of JSON-RPC messages, or a 202), the gateway's error envelope, or a JSON-RPC error
// from the transport; never a 5xx and never -32603 (Internal error), which is how the SDK reported
// params it could not parse before the route checked them (src/mcp/request-screen.ts).

const MCP_COUNT = 300;
const MCP_VERSION = '2025-03-26';
const MCP_KIND_WEIGHTS: readonly (readonly [Kind, number])[] = KIND_WEIGHTS.filter(([k]) => k !== 'content_type');

const mcpSuite = { gw: null as GatewayProcess | null, key: '', session: '' };

/** A valid message to this server: a call of an exec.* tool (no agent needed), a listing, a ping, a notification. */
function mcpMessage(rng: Rng, id: number): FuzzObject {
  const roll = rng.int(6);
  if (roll === 0) return { jsonrpc: '2.0', id, method: 'tools/list', ...(rng.chance(0.3) ? { params: { cursor: 'c' } } : {}) };
  if (roll === 1) return { jsonrpc: '2.0', id, method: 'ping' };
  if (roll === 2) return { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: id, reason: 'fuzz' } };
  const calls: readonly (() => FuzzObject)[] = [
    () => ({ name: 'exec.approvals_list', arguments: { state: rng.pick(['pending', 'accepted']), limit: rng.between(1, 100) } }),
    () => ({ name: 'exec.invocation_status', arguments: { invocation_id: 'inv_000000000000000000000000' } }),
    () => ({ name: 'exec.approval_reject', arguments: { approval_id: 'app_000000000000000000000000', reason: 'fuzz' } }),
    () => ({ name: 'no_such_tool', arguments: {} }),
  ];
  return { jsonrpc: '2.0', id: rng.chance(0.8) ? id : `req-${id}`, method: 'tools/call', params: rng.pick(calls)() };
}

interface McpCase {
  readonly index: number;
  readonly detail: string;
  readonly headers: Record<string, string>;
  readonly body: Buffer | null;
}

function makeMcpCase(index: number): McpCase {
  const rng = new Rng(caseSeed(SEED ^ 0x6d6370, index));
  const batch = rng.chance(0.3);
  let value: FuzzValue = batch ? Array.from({ length: rng.between(1, 6) }, (_, i) => mcpMessage(rng, i + 1)) : mcpMessage(rng, 1);
  const kind = rng.weighted(MCP_KIND_WEIGHTS);
  let detail = `${batch ? 'batch' : 'message'}, unchanged`;
  if (isStructural(kind)) ({ value, detail } = mutateStructure(rng, value, kind));
  const text = Buffer.from(serialize(value));
  let body: Buffer | null = text;
  if (kind === 'truncate') ({ bytes: body, detail } = truncated(rng, text));
  else if (kind === 'invalid_utf8') ({ bytes: body, detail } = withInvalidUtf8(rng, text));
  else if (kind === 'empty') ({ body, detail } = { body: Buffer.alloc(0), detail: 'Content-Length: 0' });
  else if (kind === 'non_object') {
    const [label, make] = rng.pick(NON_OBJECTS);
    ({ body, detail } = { body: Buffer.from(make(text.toString())), detail: label });
  }
  const headers: Record<string, string> = { authorization: `Bearer ${mcpSuite.key}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
  // Mostly on the session; sometimes none (a stray message), an unknown one, or a protocol version the SDK refuses.
  const session = rng.weighted([['live', 16], ['none', 2], ['unknown', 1], ['bad-version', 1]] as const);
  if (session !== 'none') headers['mcp-session-id'] = session === 'unknown' ? '00000000-0000-4000-8000-000000000000' : mcpSuite.session;
  if (session !== 'none') headers['mcp-protocol-version'] = session === 'bad-version' ? '1999-01-01' : MCP_VERSION;
  return { index, detail: `${kind}: ${detail} (session ${session})`, headers, body };
}

function isJsonRpcError(v: unknown): boolean {
  if (!isRecord(v) || v.jsonrpc !== '2.0' || !isRecord(v.error)) return false;
  return typeof v.error.code === 'number' && typeof v.error.message === 'string';
}

/** What is wrong with an MCP answer, or null. */
function mcpAnswerProblem(a: Answer): string | null {
  if (a.status >= 500) return `a ${a.status}: a server error`;
  const type = a.headers['content-type'] ?? '';
  if (a.status === 202) return a.body === '' ? null : 'a 202 with a body';
  if (type.startsWith('text/event-stream')) {
    for (const line of a.body.split('\n').filter((l) => l.startsWith('data: '))) {
      const parsed = parseJson(line.slice(6));
      if (!parsed.ok || !isRecord(parsed.value) || parsed.value.jsonrpc !== '2.0') return `an SSE message that is not JSON-RPC: ${line.slice(0, 200)}`;
      if (isRecord(parsed.value.error) && parsed.value.error.code === -32603) return `a -32603 Internal error: ${line.slice(0, 300)}`;
    }
    return null;
  }
  const parsed = parseJson(a.body);
  if (!type.startsWith('application/json') || !parsed.ok) return `a ${a.status} that is not JSON (${type})`;
  if (isJsonRpcError(parsed.value)) return (parsed.value as { error: { code: number } }).error.code === -32603 ? 'a -32603 Internal error' : null;
  return envelopeProblem(parsed.value, a.status);
}

describe(`fuzzing MCP request bodies (seed ${SEED})`, () => {
  beforeAll(async () => {
    const keys = makeExecKeys();
    // Unmetered: the run is about bodies; the batch charge has its own test (mcp-tenants.test.ts).
    const config = execConfig(keys);
    for (const p of config.projects as unknown as { rate_limit?: unknown }[]) p.rate_limit = { requests_per_minute: 0, tokens_per_minute: 0 };
    mcpSuite.gw = await startGatewayProcess(config);
    mcpSuite.key = keys.exec;
    const init = await fetch(`${mcpSuite.gw.url}/${PROJECT}/v1/mcp`, {
      method: 'POST',
      headers: { authorization: `Bearer ${keys.exec}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: MCP_VERSION, capabilities: {}, clientInfo: { name: 'fuzz', version: '1' } } }),
    });
    await init.text();
    mcpSuite.session = init.headers.get('mcp-session-id') ?? '';
    expect(mcpSuite.session).not.toBe('');
  });

  afterAll(async () => {
    await mcpSuite.gw?.stop();
  });

  it('answers every mutated message or batch with a 2xx, the envelope or a JSON-RPC error; never a 5xx or -32603', { timeout: 60_000 }, async () => {
    const gw = mcpSuite.gw as GatewayProcess;
    const cases = Array.from({ length: MCP_COUNT }, (_, i) => i).filter((i) => !ONLY || ONLY.has(i)).map(makeMcpCase);
    const failures: string[] = [];
    await runBounded(cases, CONCURRENCY, async (c) => {
      const res = await fetch(`${gw.url}/${PROJECT}/v1/mcp`, { method: 'POST', headers: c.headers, body: c.body ? new Uint8Array(c.body) : undefined, signal: AbortSignal.timeout(ANSWER_TIMEOUT_MS) });
      const answer: Answer = { status: res.status, headers: Object.fromEntries(res.headers), body: await res.text() };
      const problem = mcpAnswerProblem(answer);
      if (problem) failures.push(`#${c.index} ${c.detail}\n  problem: ${problem}\n  request body: ${preview(c.body)}\n  answer: ${answer.status} ${preview(answer.body, 600)}`);
    });
    expect(failures.length, `${failures.length} bad MCP answers (FUZZ_ONLY=<index> replays one); the first ones:\n\n${failures.slice(0, 6).join('\n\n')}`).toBe(0);
    const alive = await fetch(`${gw.url}/healthz`);
    expect(alive.status).toBe(200);
    const unexpected = gw.stdout.join('').split('\n').filter((l) => l.includes('"unexpected error"'));
    expect(unexpected.slice(0, 3)).toEqual([]);
  });
});
