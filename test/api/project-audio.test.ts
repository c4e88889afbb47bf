/**
 * Issue 20 on the audio routes: POST /{project}/v1/audio/transcriptions, /translations and /speech pick the
 * endpoint by the `model` field (a form field on uploads) and otherwise behave as the direct routes. The
 * Node SDK writes the file before `model` (the upload is held until the field arrives); a form with
 * `model` first streams as on the direct route. Both must forward the same parts.
 */
import OpenAI, { APIError, toFile } from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pcm16ToWav } from '../../src/core/audio/wav.js';
import { silence, speak, SPEECH_SAMPLE_RATE } from '../../src/simulator/speech-codec.js';
import { audioTestConfig, SPEECH_ID, TRANSCRIBE_ID } from '../helpers/audio-config.js';
import { makeKeys, PROJECT, type TestKeys } from '../helpers/configs.js';
import { expectError, type JsonResponse } from '../helpers/http.js';
import { startGatewayProcess, startSimulatorProcess, type GatewayProcess, type SimulatorProcess } from '../helpers/processes.js';
import { lastSimRequest } from '../helpers/simulator-log.js';
import { openUsageDb, type UsageDb } from '../helpers/usage-db.js';

let sim: SimulatorProcess;
let gw: GatewayProcess;
let keys: TestKeys;
let ledger: UsageDb;
let client: OpenAI;
const UPLOAD_CAP = 512 * 1024;

beforeAll(async () => {
  keys = makeKeys();
  sim = await startSimulatorProcess();
  gw = await startGatewayProcess(audioTestConfig(sim.url, keys, { audio: { max_upload_bytes: UPLOAD_CAP } }));
  ledger = openUsageDb(gw.dbPath);
  client = new OpenAI({ baseURL: `${gw.url}/${PROJECT}/v1`, apiKey: keys.full, maxRetries: 0 });
});

afterAll(async () => {
  ledger?.close();
  await gw?.stop();
  await sim?.stop();
});

const wavBytes = (text: string): Buffer => pcm16ToWav(Buffer.concat([silence(50), speak(text), silence(50)]), SPEECH_SAMPLE_RATE);
const wav = (text: string): Blob => new Blob([new Uint8Array(wavBytes(text))], { type: 'audio/wav' });

function form(fields: Record<string, string>, file: Blob | null, fileFirst: boolean): FormData {
  const f = new FormData();
  if (file && fileFirst) f.append('file', file, 'speech.wav');
  for (const [k, v] of Object.entries(fields)) f.append(k, v);
  if (file && !fileFirst) f.append('file', file, 'speech.wav');
  return f;
}

async function post(route: string, body: FormData | string, headers: Record<string, string> = {}): Promise<JsonResponse> {
  const res = await fetch(`${gw.url}/${PROJECT}/v1/audio/${route}`, { method: 'POST', headers: { authorization: `Bearer ${keys.full}`, ...headers }, body });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // audio bytes or plain text
  }
  return { status: res.status, headers: res.headers, body: parsed };
}

interface UploadSummary {
  fields: Record<string, string>;
  order: string[];
  files: { bytes: number }[];
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

describe('POST /{project}/v1/audio/transcriptions and /translations', () => {
  it('transcribes with the model the SDK names (file sent first), forwarding the endpoint\'s upstream model first', async () => {
    const ids: string[] = [];
    for await (const model of client.models.list()) ids.push(model.id);
    expect(ids).toContain('model-whisper');
    const file = await toFile(wavBytes('hello world'), 'speech.wav', { type: 'audio/wav' });
    const { data, response } = await client.audio.transcriptions.create({ file, model: 'model-whisper', language: 'en' }).withResponse();
    expect(data.text).toBe('hello world');
    const summary = JSON.parse((await lastSimRequest(sim.url)).body) as UploadSummary;
    expect(summary.fields).toEqual({ model: 'sim-whisper', language: 'en' });
    expect(summary.order).toEqual(['model', 'file', 'language']);
    expect(summary.files[0]?.bytes).toBe(wavBytes('hello world').byteLength);
    expect(await ledger.waitForRow(response.headers.get('x-request-id') ?? '')).toMatchObject({ route: 'audio', endpoint_id: TRANSCRIBE_ID, status: 'completed' });
  });

  it('forwards the same parts when the form sends model before the file', async () => {
    const res = await post('transcriptions', form({ model: 'model-whisper', response_format: 'json' }, wav('model first'), false));
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ text: 'model first' });
    const summary = JSON.parse((await lastSimRequest(sim.url)).body) as UploadSummary;
    expect(summary.order).toEqual(['model', 'response_format', 'file']);
    expect(summary.fields.model).toBe('sim-whisper');
  });

  it('translates by the endpoint slug as model name', async () => {
    const file = await toFile(wavBytes('bonjour'), 'speech.wav', { type: 'audio/wav' });
    const translation = await client.audio.translations.create({ file, model: 'whisper' });
    expect(translation.text).toBe('bonjour');
    expect((await lastSimRequest(sim.url)).path).toBe('/v1/audio/translations');
  });

  it('refuses a chat model with 400, param model, saying a transcription model is needed', async () => {
    const res = await post('transcriptions', form({ model: 'model-chat' }, wav('x'), true));
    expectError(res, 400, 'invalid_request', 'model');
    expect((res.body as { error: { message: string } }).error.message).toContain('needs a transcription model');
  });

  it('answers an unknown model with 404 model_not_found, param model', async () => {
    expectError(await post('translations', form({ model: 'whisper-9' }, wav('x'), false)), 404, 'model_not_found', 'model');
  });

  it('answers a form without model with 400, param model', async () => {
    expectError(await post('transcriptions', form({ language: 'en' }, wav('x'), true)), 400, 'invalid_request', 'model');
  });

  it('answers a body that is not multipart with 400, param null', async () => {
    expectError(await post('transcriptions', '{"model":"model-whisper"}', { 'content-type': 'application/json' }), 400, 'invalid_request', null);
  });

  it('still caps an upload held back for its model field: 413 payload_too_large', async () => {
    const big = new Blob([new Uint8Array(pcm16ToWav(Buffer.alloc(UPLOAD_CAP + 1024), SPEECH_SAMPLE_RATE))], { type: 'audio/wav' });
    expectError(await post('transcriptions', form({ model: 'model-whisper' }, big, true)), 413, 'payload_too_large', null);
  });
});

describe('POST /{project}/v1/audio/speech', () => {
  it('speaks with the model the SDK names, forwarding the endpoint\'s upstream model', async () => {
    const { data, response } = await client.audio.speech.create({ model: 'model-tts', input: 'round trip', voice: 'alloy', response_format: 'wav' }).withResponse();
    expect(response.headers.get('content-type')).toBe('audio/wav');
    expect((await data.arrayBuffer()).byteLength).toBeGreaterThan(44);
    expect(JSON.parse((await lastSimRequest(sim.url)).body)).toMatchObject({ model: 'sim-tts', input: 'round trip' });
    expect(await ledger.waitForRow(response.headers.get('x-request-id') ?? '')).toMatchObject({ route: 'audio', endpoint_id: SPEECH_ID, status: 'completed' });
  });

  it('refuses a transcription model with 400, param model', async () => {
    const err = await refusalOf(client.audio.speech.create({ model: 'model-whisper', input: 'x', voice: 'alloy' }));
    expect({ status: err.status, code: err.code, param: err.param }).toEqual({ status: 400, code: 'invalid_request', param: 'model' });
    expect(err.message).toContain('needs a speech model');
  });

  it('answers an unknown model with 404 model_not_found pointing at the models route', async () => {
    const err = await refusalOf(client.audio.speech.create({ model: 'tts-9', input: 'x', voice: 'alloy' }));
    expect({ status: err.status, code: err.code, param: err.param }).toEqual({ status: 404, code: 'model_not_found', param: 'model' });
    expect(err.message).toContain(`GET /${PROJECT}/v1/models`);
  });
});
