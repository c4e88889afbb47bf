/**
 * Issue 20, "one base URL for every model": the official `openai` client with base URL `/{project}/v1`
 * lists the models and calls each by name (chat, streaming, embeddings), as it would on any
 * OpenAI-compatible server. The body's `model` picks the endpoint (an id, an endpoint slug), within the
 * key's reach; the listing and the route agree.
 */
import { DEFAULT_CONTENT_TOKENS, DEFAULT_REASONING_TOKENS } from '../../src/simulator/chat-completion.js';
import { DEFAULT_DIMENSIONS } from '../../src/simulator/embeddings.js';
import OpenAI, { APIError } from 'openai';
import type { ChatCompletionChunk } from 'openai/resources/chat/completions';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHAT_ID, EMBED_ID, makeKeys, PROJECT, REASONER_ID, testConfig, WS_B, WS_DEFAULT } from '../helpers/configs.js';
import { mintTestKey, startGatewayProcess, startSimulatorProcess } from '../helpers/processes.js';
import { simRequests } from '../helpers/simulator-log.js';
import { useProcesses } from '../helpers/suite.js';
import { openUsageDb, type UsageDb } from '../helpers/usage-db.js';

/** A second project where one model id is served twice: the ambiguity rules, end to end. */
/** The models test/helpers/configs.ts serves from the simulator's `sim-reasoner`, a reasoning model. */
const REASONING_UPSTREAM = new Set(['acme/model-reasoner', 'model-slow']);
const TWINS = 'proj_twins';
const WS_HOME = 'ws_1a1a1a';
const WS_AWAY = 'ws_2b2b2b';
const TWIN_HOME = 'c0000000-0000-4000-8000-000000000001';
const TWIN_AWAY = 'c0000000-0000-4000-8000-000000000002';
const DUP_PAUSED = 'c0000000-0000-4000-8000-000000000003';
const DUP_LIVE = 'c0000000-0000-4000-8000-000000000004';
const twinKeys = { open: mintTestKey('twins'), away: mintTestKey('twins') };

function twinEndpoint(upstream: string, id: string, slug: string, modelId: string, workspaces: string[], extra: Record<string, unknown> = {}) {
  return { id, slug, name: slug, kind: 'chat', tier: 'gpu', workspaces, model: { id: modelId, context_window: 8192 }, upstream: { base_url: upstream, model: 'sim-chat' }, ...extra };
}

function twinsProject(upstream: string) {
  return {
    id: TWINS,
    slug: 'twins',
    default_workspace: WS_HOME,
    workspaces: [
      { id: WS_HOME, name: 'Home' },
      { id: WS_AWAY, name: 'Away' },
    ],
    // Slugs sort against the rule under test: slug order alone would pick twin-away and dup-a-paused.
    endpoints: [
      twinEndpoint(upstream, TWIN_AWAY, 'twin-away', 'shared', [WS_AWAY]),
      twinEndpoint(upstream, TWIN_HOME, 'twin-home', 'shared', [WS_HOME]),
      twinEndpoint(upstream, DUP_PAUSED, 'dup-a-paused', 'dup', [WS_HOME], { status: 'suspended' }),
      twinEndpoint(upstream, DUP_LIVE, 'dup-b-live', 'dup', [WS_HOME]),
    ],
    keys: [
      { value: twinKeys.open, scopes: ['inference'] },
      { value: twinKeys.away, scopes: ['inference'], allowed_workspace_ids: [WS_AWAY] },
    ],
  };
}

const suite = useProcesses(async () => {
  const keys = makeKeys();
  const sim = await startSimulatorProcess();
  const config = testConfig(sim.url, keys, { extraProjects: [twinsProject(sim.url)] });
  const gw = await startGatewayProcess(config);
  return { sim, gw, keys, config };
});

let ledger: UsageDb;
beforeAll(() => {
  ledger = openUsageDb(suite.gw.dbPath);
});
afterAll(() => ledger?.close());

function clientFor(apiKey: string, options: { project?: string; workspace?: string; endpoint?: string } = {}): OpenAI {
  const base = options.endpoint ? `${options.project ?? PROJECT}/${options.endpoint}` : (options.project ?? PROJECT);
  return new OpenAI({
    baseURL: `${suite.gw.url}/${base}/v1`,
    apiKey,
    maxRetries: 0,
    ...(options.workspace ? { defaultHeaders: { 'X-Workspace-Id': options.workspace } } : {}),
  });
}

const ask = (model: string) => ({ model, messages: [{ role: 'user' as const, content: `hello ${model}` }] });

async function listIds(client: OpenAI): Promise<string[]> {
  const ids: string[] = [];
  for await (const model of client.models.list()) ids.push(model.id);
  return ids.sort();
}

interface ConfigEndpoint {
  readonly id: string;
  readonly kind: string;
  readonly status?: string;
  readonly model: { readonly id: string };
}

const configEndpoints = (): ConfigEndpoint[] => suite.config.projects.flatMap((p) => p.endpoints as ConfigEndpoint[]);

/** The ids of listed models the test config serves with an active endpoint of this kind. */
function activeIds(ids: readonly string[], kind: string): string[] {
  return ids.filter((id) => configEndpoints().some((e) => e.model.id === id && e.kind === kind && (e.status ?? 'active') === 'active'));
}

const activeChatIds = (ids: readonly string[]): string[] => activeIds(ids, 'chat');

/** The endpoint and workspace a request was served and billed by (its usage row). */
async function servedBy(requestId: string | null): Promise<{ endpoint: string; workspace: string | null }> {
  if (!requestId) throw new Error('no X-Request-ID');
  const row = await ledger.waitForRow(requestId);
  return { endpoint: row.endpoint_id, workspace: row.workspace_id };
}

async function refusalOf(call: Promise<unknown>): Promise<APIError> {
  try {
    await call;
  } catch (err) {
    if (err instanceof APIError) return err;
    throw err;
  }
  throw new Error('expected the call to be refused');
}

async function streamed(client: OpenAI, model: string): Promise<ChatCompletionChunk[]> {
  const stream = await client.chat.completions.create({ ...ask(model), stream: true, stream_options: { include_usage: true } });
  const chunks: ChatCompletionChunk[] = [];
  for await (const chunk of stream) chunks.push(chunk);
  return chunks;
}

describe('one client with base URL /{project}/v1', () => {
  it('lists the models, then calls every listed chat model by its id, buffered and streamed', async () => {
    const client = clientFor(suite.keys.full);
    const chatIds = activeChatIds(await listIds(client));
    expect(chatIds).toEqual(['acme/model-reasoner', 'model-b-only', 'model-chat', 'model-plain', 'model-slow', 'model-small']);
    for (const id of chatIds) {
      const { data, response } = await client.chat.completions.create(ask(id)).withResponse();
      expect(data.model).toBe(id);
      expect(data.choices[0]?.message.content?.length).toBeGreaterThan(0);
      const endpoint = (await servedBy(response.headers.get('x-request-id'))).endpoint;
      const served = configEndpoints().find((e) => e.id === endpoint);
      expect(served?.model.id).toBe(id);

      const chunks = await streamed(client, id);
      expect(chunks.every((c) => c.model === id)).toBe(true);
      expect(chunks.map((c) => c.choices[0]?.finish_reason).filter(Boolean)).toEqual(['stop']);
      // The simulator's 16 content tokens, and 8 reasoning tokens on top from the two endpoints on its sim-reasoner.
      expect(chunks.at(-1)?.usage?.completion_tokens).toBe(DEFAULT_CONTENT_TOKENS + (REASONING_UPSTREAM.has(id) ? DEFAULT_REASONING_TOKENS : 0));
    }
  });

  it('forwards the body with model replaced by the endpoint\'s upstream model and echoes the client\'s name', async () => {
    const client = clientFor(suite.keys.full);
    const completion = await client.chat.completions.create({ ...ask('acme/model-reasoner'), temperature: 0.5 });
    expect(completion.model).toBe('acme/model-reasoner');
    const [seen] = await simRequests(suite.sim.url, 1);
    const body = JSON.parse(seen?.body ?? '{}') as Record<string, unknown>;
    expect(body.model).toBe('sim-reasoner');
    expect(body.temperature).toBe(0.5);
  });

  it('accepts an endpoint slug as the model name', async () => {
    const { data, response } = await clientFor(suite.keys.full).chat.completions.create(ask('reasoner')).withResponse();
    expect(data.model).toBe('reasoner');
    expect((await servedBy(response.headers.get('x-request-id'))).endpoint).toBe(REASONER_ID);
  });

  it('answers an unknown model with 404 model_not_found, param model, pointing at the models route', async () => {
    const err = await refusalOf(clientFor(suite.keys.full).chat.completions.create(ask('gpt-nope')));
    expect({ status: err.status, code: err.code, param: err.param }).toEqual({ status: 404, code: 'model_not_found', param: 'model' });
    expect(err.message).toContain(`GET /${PROJECT}/v1/models`);
  });

  it('refuses a listed embedding model on chat completions with 400 saying it is an embedding model', async () => {
    const err = await refusalOf(clientFor(suite.keys.full).chat.completions.create(ask('model-embed')));
    expect({ status: err.status, code: err.code, param: err.param }).toEqual({ status: 400, code: 'invalid_request', param: 'model' });
    expect(err.message).toMatch(/embedding endpoint embed.*needs a chat model/);
  });

  it('answers a listed model whose only endpoint is suspended as the direct route does: 503 endpoint_unavailable', async () => {
    const byModel = await refusalOf(clientFor(suite.keys.full).chat.completions.create(ask('model-paused')));
    const direct = await refusalOf(clientFor(suite.keys.full, { endpoint: 'paused' }).chat.completions.create(ask('model-paused')));
    expect({ status: byModel.status, code: byModel.code }).toEqual({ status: 503, code: 'endpoint_unavailable' });
    expect({ status: direct.status, code: direct.code }).toEqual({ status: byModel.status, code: byModel.code });
  });

  it('calls every listed embedding model by its id with embeddings.create, echoing the name', async () => {
    const client = clientFor(suite.keys.full);
    const embeddingIds = activeIds(await listIds(client), 'embedding');
    expect(embeddingIds).toEqual(['model-embed']);
    for (const id of embeddingIds) {
      const { data, response } = await client.embeddings.create({ model: id, input: ['one base URL', 'every model'] }).withResponse();
      expect(data.model).toBe(id);
      expect(data.data).toHaveLength(2);
      expect(data.data[0]?.embedding.length).toBe(DEFAULT_DIMENSIONS);
      expect((await servedBy(response.headers.get('x-request-id'))).endpoint).toBe(EMBED_ID);
    }
  });

  it('accepts an embedding endpoint\'s slug as the model name', async () => {
    expect((await clientFor(suite.keys.full).embeddings.create({ model: 'embed', input: 'slug' })).model).toBe('embed');
  });

  it('refuses a chat model on embeddings with 400, param model, saying an embedding model is needed', async () => {
    const err = await refusalOf(clientFor(suite.keys.full).embeddings.create({ model: 'model-chat', input: 'x' }));
    expect({ status: err.status, code: err.code, param: err.param }).toEqual({ status: 400, code: 'invalid_request', param: 'model' });
    expect(err.message).toMatch(/chat endpoint chat.*\/v1\/embeddings needs an embedding model/);
  });

  it('answers an unknown model on embeddings with 404 model_not_found', async () => {
    const err = await refusalOf(clientFor(suite.keys.full).embeddings.create({ model: 'text-embedding-nope', input: 'x' }));
    expect({ status: err.status, code: err.code, param: err.param }).toEqual({ status: 404, code: 'model_not_found', param: 'model' });
  });

  it('keeps the direct route\'s rule that the body\'s model is informational', async () => {
    const { response } = await clientFor(suite.keys.full, { endpoint: 'chat' }).chat.completions.create(ask('acme/model-reasoner')).withResponse();
    expect((await servedBy(response.headers.get('x-request-id'))).endpoint).toBe(CHAT_ID);
  });
});

describe('the key\'s reach: what the listing shows is callable, and nothing else is', () => {
  const reaches: [string, () => OpenAI][] = [
    ['an endpoint-bound key', () => clientFor(suite.keys.endpointBound)],
    ['a key confined to one workspace', () => clientFor(suite.keys.confinedOne)],
    ['a key confined to two workspaces, naming one', () => clientFor(suite.keys.confinedTwo, { workspace: WS_DEFAULT })],
    ['an unconfined key naming a workspace', () => clientFor(suite.keys.full, { workspace: WS_B })],
  ];
  it.each(reaches)('%s can call every chat model it lists', async (_name, make) => {
    const client = make();
    const ids = activeChatIds(await listIds(client));
    expect(ids.length).toBeGreaterThan(0);
    for (const id of ids) expect((await client.chat.completions.create(ask(id))).model).toBe(id);
  });

  it('gives an endpoint-bound key 403 endpoint_restricted for another endpoint\'s model, as the direct route does', async () => {
    expect(await listIds(clientFor(suite.keys.endpointBound))).toEqual(['model-chat']);
    const byModel = await refusalOf(clientFor(suite.keys.endpointBound).chat.completions.create(ask('model-plain')));
    const direct = await refusalOf(clientFor(suite.keys.endpointBound, { endpoint: 'plain' }).chat.completions.create(ask('model-plain')));
    expect({ status: byModel.status, code: byModel.code }).toEqual({ status: 403, code: 'endpoint_restricted' });
    expect({ status: direct.status, code: direct.code }).toEqual({ status: 403, code: 'endpoint_restricted' });
  });

  it('gives 403 workspace_not_allowed for a model the named workspace does not have, as the direct route does', async () => {
    const client = clientFor(suite.keys.confinedTwo, { workspace: WS_DEFAULT });
    expect(await listIds(client)).not.toContain('model-b-only');
    const byModel = await refusalOf(client.chat.completions.create(ask('model-b-only')));
    const direct = await refusalOf(clientFor(suite.keys.confinedTwo, { workspace: WS_DEFAULT, endpoint: 'b-only' }).chat.completions.create(ask('x')));
    expect({ status: byModel.status, code: byModel.code }).toEqual({ status: 403, code: 'workspace_not_allowed' });
    expect(direct.code).toBe(byModel.code);
  });

  it('gives a key confined to two workspaces that names none 403 workspace_required', async () => {
    const err = await refusalOf(clientFor(suite.keys.confinedTwo).chat.completions.create(ask('model-chat')));
    expect({ status: err.status, code: err.code }).toEqual({ status: 403, code: 'workspace_required' });
  });

  it('runs a confined key\'s request in its own workspace', async () => {
    const { response } = await clientFor(suite.keys.confinedOne).chat.completions.create(ask('model-chat')).withResponse();
    expect(await servedBy(response.headers.get('x-request-id'))).toEqual({ endpoint: CHAT_ID, workspace: WS_B });
  });
});

describe('one model id served by several endpoints', () => {
  const servedFor = async (client: OpenAI, model: string) => {
    const { response } = await client.chat.completions.create(ask(model)).withResponse();
    return servedBy(response.headers.get('x-request-id'));
  };

  it('lists the id once and serves it, for an unconfined key, from the endpoint of the default workspace', async () => {
    const client = clientFor(twinKeys.open, { project: TWINS });
    expect(await listIds(client)).toEqual(['dup', 'shared']);
    expect(await servedFor(client, 'shared')).toEqual({ endpoint: TWIN_HOME, workspace: WS_HOME });
  });

  it('serves it from the named workspace\'s endpoint under X-Workspace-Id', async () => {
    expect(await servedFor(clientFor(twinKeys.open, { project: TWINS, workspace: WS_AWAY }), 'shared')).toEqual({ endpoint: TWIN_AWAY, workspace: WS_AWAY });
  });

  it('serves a confined key from the endpoint of its workspace', async () => {
    expect(await servedFor(clientFor(twinKeys.away, { project: TWINS }), 'shared')).toEqual({ endpoint: TWIN_AWAY, workspace: WS_AWAY });
  });

  it('prefers the active endpoint to a suspended one', async () => {
    expect((await servedFor(clientFor(twinKeys.open, { project: TWINS }), 'dup')).endpoint).toBe(DUP_LIVE);
  });
});
