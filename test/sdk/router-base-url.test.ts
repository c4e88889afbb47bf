/**
 * The official `openai` client with the router base URL as its whole configuration (issue 21): models,
 * embeddings and chat all work against `/{project}/_semantic/router/v1`, and embeddings against an
 * embedding endpoint's own base URL.
 */
import OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import { useBaseUrlSuite } from '../helpers/base-url-config.js';
import { PROJECT } from '../helpers/configs.js';
import { ROUTER_PROJECT } from '../helpers/router-config.js';

const suite = useBaseUrlSuite();
const clientAt = (path: string, apiKey: string): OpenAI => new OpenAI({ baseURL: `${suite.gw.url}/${path}`, apiKey, maxRetries: 0 });
const router = (): OpenAI => clientAt(`${ROUTER_PROJECT}/_semantic/router/v1`, suite.routerKeys.full);

describe('openai client on the router base URL', () => {
  it('lists the routed pseudo-model and the routable models', async () => {
    const models = [];
    for await (const model of router().models.list()) models.push(model);
    expect(models[0]?.id).toBe('auto');
    expect(models.slice(1).map((m) => m.id).sort()).toEqual(['model-chat', 'model-math', 'model-vision']);
    expect(models[0]).toMatchObject({ object: 'model', owned_by: ROUTER_PROJECT });
    expect((await router().models.retrieve('auto')).id).toBe('auto');
  });

  it('creates embeddings through the project embedding endpoint (base64 by default, decoded by the client)', async () => {
    const { data, response } = await router().embeddings.create({ model: 'auto', input: ['solve the equation 2x + 3 = 7', 'plan a weekend trip'] }).withResponse();
    expect(response.headers.get('x-service-routed-endpoint')).toBe('embed');
    expect(data.model).toBe('auto');
    expect(data.data).toHaveLength(2);
    expect(data.data[0]?.embedding).toHaveLength(256);
    expect(data.data[0]?.embedding.every((x) => typeof x === 'number' && Number.isFinite(x))).toBe(true);
    // The simulator counts ceil(bytes / 4) per input: 29 and 19 bytes.
    expect(data.usage.prompt_tokens).toBe(8 + 5);
  });

  it('sends a turn that asks for reasoning to an endpoint whose model reasons', async () => {
    const { data, response } = await clientAt(`${PROJECT}/_semantic/router/v1`, suite.keys.full)
      .chat.completions.create({ model: 'auto', reasoning_effort: 'high', messages: [{ role: 'user', content: 'why is the sky blue' }] })
      .withResponse();
    expect(response.headers.get('x-service-routed-endpoint')).toBe('reasoner');
    expect(data.choices[0]?.message.content).toEqual(expect.any(String));
  });

  it('surfaces a reasoning turn no endpoint can serve as a typed 400 with the SPEC code and param', async () => {
    const err = await router()
      .chat.completions.create({ model: 'auto', reasoning_effort: 'low', messages: [{ role: 'user', content: 'hi' }] })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    expect(err).toMatchObject({ code: 'unsupported_parameter', param: 'reasoning_effort' });
  });
});

describe('openai client on an embedding endpoint', () => {
  it('creates embeddings with float vectors and the request model echoed', async () => {
    const result = await clientAt(`${PROJECT}/embed/v1`, suite.keys.full).embeddings.create({ model: 'text-embedding-3-small', input: 'hello world', encoding_format: 'float', dimensions: 16 });
    expect(result.model).toBe('text-embedding-3-small');
    expect(result.data[0]?.embedding).toHaveLength(16);
    expect(result.usage.prompt_tokens).toBe(3);
  });
});
