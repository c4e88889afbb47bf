/**
 * Embeddings through the official `openai` client. Its default call sends `encoding_format: "base64"`
 * and decodes the answer; the simulator's knobs stand in for model servers that ignore `encoding_format`
 * or `dimensions` (several do), to show what the client then receives.
 */
import OpenAI from 'openai';
import type { EmbeddingCreateParams } from 'openai/resources/embeddings';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_DIMENSIONS, embedText } from '../../src/simulator/embeddings.js';
import { makeKeys, PROJECT, testConfig, type TestKeys } from '../helpers/configs.js';
import { startGatewayProcess, startSimulatorProcess, type GatewayProcess, type SimulatorProcess } from '../helpers/processes.js';

let sim: SimulatorProcess;
let gw: GatewayProcess;
let keys: TestKeys;
let client: OpenAI;

beforeAll(async () => {
  keys = makeKeys();
  sim = await startSimulatorProcess();
  gw = await startGatewayProcess(testConfig(sim.url, keys));
  client = new OpenAI({ baseURL: `${gw.url}/${PROJECT}/embed/v1`, apiKey: keys.full, maxRetries: 0 });
});

afterAll(async () => {
  await gw?.stop();
  await sim?.stop();
});

/** The simulator's `sim` knobs as an extra body field, which the gateway forwards untouched. */
const withSim = (params: EmbeddingCreateParams, knobs: Record<string, unknown>): EmbeddingCreateParams => Object.assign({}, params, { sim: knobs });

/** What a float32 on the wire holds of each number. */
const asFloat32 = (v: readonly number[]): number[] => Array.from(Float32Array.from(v));

describe('embeddings through the openai client', () => {
  it('decodes the vectors of its default base64 request', async () => {
    const res = await client.embeddings.create({ model: 'text-embedding-3-small', input: ['the cat sat', 'a dog ran'] });
    expect(res.data.map((d) => d.embedding)).toEqual([asFloat32(embedText('the cat sat')), asFloat32(embedText('a dog ran'))]);
    expect(res.model).toBe('text-embedding-3-small');
  });

  // Was: the server's number arrays were passed on to a client that had asked for base64, and the SDK
  // decoded each into [] with no error.
  it('gets the vectors when the model server ignores encoding_format and answers number arrays', async () => {
    const res = await client.embeddings.create(withSim({ model: 'm', input: ['the cat sat', 'a dog ran'] }, { embedding_format: 'float' }));
    expect(res.data.map((d) => d.embedding)).toEqual([asFloat32(embedText('the cat sat')), asFloat32(embedText('a dog ran'))]);
    expect(res.data[0]?.embedding).toHaveLength(DEFAULT_DIMENSIONS);
  });

  it('gets number arrays when it asks for float and the model server answers base64', async () => {
    for (const params of [{ model: 'm', input: 'hello world', encoding_format: 'float' as const }]) {
      const res = await client.embeddings.create(withSim(params, { embedding_format: 'base64' }));
      expect(res.data[0]?.embedding).toEqual(asFloat32(embedText('hello world')));
    }
    // No encoding_format in a raw request means float too (OpenAI's default).
    const raw = await fetch(`${gw.url}/${PROJECT}/embed/v1/embeddings`, {
      method: 'POST',
      headers: { authorization: `Bearer ${keys.full}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'm', input: 'hello world', sim: { embedding_format: 'base64' } }),
    });
    const body = (await raw.json()) as { data: { embedding: unknown }[] };
    expect(body.data[0]?.embedding).toEqual(asFloat32(embedText('hello world')));
  });

  it('refuses with 400 unsupported_parameter on dimensions when the model server answers another size', async () => {
    const err = await client.embeddings.create(withSim({ model: 'm', input: 'hello world', dimensions: 8 }, { ignore_dimensions: true })).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    const e = err as InstanceType<typeof OpenAI.BadRequestError>;
    expect({ code: e.code, param: e.param }).toEqual({ code: 'unsupported_parameter', param: 'dimensions' });
    expect(e.message).toContain(`${DEFAULT_DIMENSIONS}`);
    const honoured = await client.embeddings.create({ model: 'm', input: 'hello world', dimensions: 8 });
    expect(honoured.data[0]?.embedding).toHaveLength(8);
  });
});
