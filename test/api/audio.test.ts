/**
 * SPEC "Audio": transcriptions and translations (multipart, streamed to the upstream), speech (JSON,
 * audio bytes or SSE). Real gateway and simulator processes; the simulator's speech code makes transcripts
 * exact (src/simulator/speech-codec.ts), and its request log shows what reached the upstream.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pcm16ToWav } from '../../src/core/audio/wav.js';
import { silence, speak, SPEECH_SAMPLE_RATE } from '../../src/simulator/speech-codec.js';
import { audioTestConfig, SPEECH_ID, TRANSCRIBE_ID } from '../helpers/audio-config.js';
import { makeKeys, PROJECT, type TestKeys } from '../helpers/configs.js';
import { call, expectError, type JsonResponse } from '../helpers/http.js';
import { startGatewayProcess, startSimulatorProcess, type GatewayProcess, type SimulatorProcess } from '../helpers/processes.js';
import { lastSimRequest, simSeq, waitForSim } from '../helpers/simulator-log.js';
import { parseSse } from '../helpers/sse.js';
import { openUsageDb, type UsageDb } from '../helpers/usage-db.js';

let sim: SimulatorProcess;
let gw: GatewayProcess;
let keys: TestKeys;
let ledger: UsageDb;
const UPLOAD_CAP = 512 * 1024;
const SLOW_SPEECH_ID = 'b3b3b3b3-b3b3-4b3b-8b3b-b3b3b3b3b3b3';

beforeAll(async () => {
  keys = makeKeys();
  sim = await startSimulatorProcess();
  const config = audioTestConfig(sim.url, keys, { audio: { max_upload_bytes: UPLOAD_CAP } });
  // The free tier's short idle deadline (FREE_TIER_TIMEOUTS), for a speech stream the model leaves idle.
  config.projects[0].endpoints.push({ id: SLOW_SPEECH_ID, slug: 'tts-slow', name: 'Slow speech', kind: 'speech', tier: 'free', model: { id: 'model-tts-slow', context_window: 8192 }, upstream: { base_url: sim.url, model: 'sim-tts' } });
  gw = await startGatewayProcess(config);
  ledger = openUsageDb(gw.dbPath);
});

afterAll(async () => {
  ledger?.close();
  await gw?.stop();
  await sim?.stop();
});

const url = (slug: string, route: string): string => `${gw.url}/${PROJECT}/${slug}/v1/audio/${route}`;
const wav = (text: string): Blob => new Blob([new Uint8Array(pcm16ToWav(Buffer.concat([silence(50), speak(text), silence(50)]), SPEECH_SAMPLE_RATE))], { type: 'audio/wav' });

function form(fields: Record<string, string>, file: Blob | null = wav('hello world'), fileFirst = true): FormData {
  const f = new FormData();
  if (file && fileFirst) f.append('file', file, 'speech.wav');
  for (const [k, v] of Object.entries(fields)) f.append(k, v);
  if (file && !fileFirst) f.append('file', file, 'speech.wav');
  return f;
}

async function upload(slug: string, route: string, body: FormData | string, key = keys.full, headers: Record<string, string> = {}): Promise<JsonResponse & { text: string }> {
  const res = await fetch(url(slug, route), { method: 'POST', headers: { authorization: `Bearer ${key}`, ...headers }, body });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // text, srt, vtt
  }
  return { status: res.status, headers: res.headers, body: parsed, text };
}

describe('POST /v1/audio/transcriptions', () => {
  it('streams the upload to the upstream with the endpoint model first and returns its JSON as sent', async () => {
    const res = await upload('whisper', 'transcriptions', form({ model: 'client-model', language: 'en' }));
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ text: 'hello world', usage: { type: 'tokens', output_tokens: 3 } });
    const logged = await lastSimRequest(sim.url);
    expect(logged.path).toBe('/v1/audio/transcriptions');
    const summary = JSON.parse(logged.body) as { fields: Record<string, string>; order: string[]; files: { bytes: number }[] };
    expect(summary.fields).toEqual({ model: 'sim-whisper', language: 'en' });
    expect(summary.order).toEqual(['model', 'file', 'language']);
    expect(summary.files[0]?.bytes).toBe((await wav('hello world').arrayBuffer()).byteLength);
    const row = await ledger.waitForRow(res.headers.get('x-request-id') ?? '');
    expect(row).toMatchObject({ route: 'audio', endpoint_id: TRANSCRIBE_ID, status: 'completed', usage_source: 'upstream', completion_tokens: 3 });
  });

  it.each([
    ['text', 'text/plain', 'hello world\n'],
    ['srt', 'text/plain', '1\n00:00:00,000 --> 00:00:00,210\nhello world\n\n'],
    ['vtt', 'text/vtt', 'WEBVTT\n\n00:00:00.000 --> 00:00:00.210\nhello world\n\n'],
  ])('passes response_format %s back exactly as the upstream wrote it', async (format, type, expected) => {
    const res = await upload('whisper', 'transcriptions', form({ model: 'm', response_format: format }));
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain(type);
    expect(res.text).toBe(expected);
  });

  it('passes verbose_json and an SSE transcription stream through', async () => {
    const verbose = await upload('whisper', 'transcriptions', form({ model: 'm', response_format: 'verbose_json' }));
    expect(verbose.body).toMatchObject({ task: 'transcribe', text: 'hello world', duration: 0.21 });
    const stream = await upload('whisper', 'transcriptions', form({ model: 'm', stream: 'true' }));
    expect(stream.headers.get('content-type')).toContain('text/event-stream');
    expect(stream.text).toContain('"type":"transcript.text.delta","delta":"hello"');
    expect(stream.text).toContain('"type":"transcript.text.done","text":"hello world"');
  });

  // Regression: a stream the model server cut ended as a clean 200 with no error frame (SPEC "Streaming events").
  it('ends an SSE transcription the model server cuts mid-stream with the error envelope, then [DONE]', async () => {
    const res = await upload('whisper', 'transcriptions', form({ model: 'm', stream: 'true', sim: JSON.stringify({ fail_after: 1 }) }, wav('cut short here')));
    expect(res.status).toBe(200);
    const frames = parseSse(res.text);
    expect(frames.map((f) => (f.data.startsWith('{"type"') ? (JSON.parse(f.data) as { type: string }).type : f.data.slice(0, 10)))).toEqual(['transcript.text.delta', '{"error":{', '[DONE]']);
    expect(JSON.parse(frames[1]?.data ?? '')).toEqual({ error: { message: expect.any(String), type: 'server_error', code: 'internal_error', param: null } });
    expect(await ledger.waitForRow(res.headers.get('x-request-id') ?? '')).toMatchObject({ route: 'audio', status: 'error' });
  });

  it('accepts the file after the fields and still sends model first', async () => {
    const res = await upload('whisper', 'transcriptions', form({ model: 'm', prompt: 'greetings' }, wav('second order'), false));
    expect(res.body).toMatchObject({ text: 'second order' });
    const summary = JSON.parse((await lastSimRequest(sim.url)).body) as { order: string[] };
    expect(summary.order).toEqual(['model', 'prompt', 'file']);
  });

  it('returns 400 naming file when the file is missing, and never calls the upstream', async () => {
    const before = await simSeq(sim.url);
    expectError(await upload('whisper', 'transcriptions', form({ model: 'm' }, null)), 400, 'invalid_request', 'file');
    expect(await simSeq(sim.url)).toBe(before);
  });

  it('returns 400 naming model when model is missing, after aborting the upstream call', async () => {
    expectError(await upload('whisper', 'transcriptions', form({ language: 'en' })), 400, 'invalid_request', 'model');
  });

  it.each([
    ['response_format', 'mp3'],
    ['temperature', '3'],
    ['timestamp_granularities[]', 'paragraph'],
    ['language', 'english please'],
  ])('returns 400 naming %s when its value is not allowed', async (name, value) => {
    expectError(await upload('whisper', 'transcriptions', form({ model: 'm', [name]: value })), 400, 'invalid_request', name);
  });

  it('returns 400 for a body that is not multipart', async () => {
    expectError(await upload('whisper', 'transcriptions', '{"model":"m"}', keys.full, { 'content-type': 'application/json' }), 400, 'invalid_request', null);
  });

  it('returns 413 payload_too_large once a chunked upload grows past the cap', async () => {
    const big = new Blob([new Uint8Array(pcm16ToWav(Buffer.alloc(UPLOAD_CAP + 1024), SPEECH_SAMPLE_RATE))], { type: 'audio/wav' });
    const encoded = new Response(form({ model: 'm' }, big));
    const type = encoded.headers.get('content-type') ?? '';
    const bytes = new Uint8Array(await encoded.arrayBuffer());
    // A stream body has no Content-Length: the cap is enforced while reading, not from a declaration.
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let at = 0; at < bytes.length; at += 64 * 1024) controller.enqueue(bytes.subarray(at, at + 64 * 1024));
        controller.close();
      },
    });
    const res = await fetch(url('whisper', 'transcriptions'), { method: 'POST', headers: { authorization: `Bearer ${keys.full}`, 'content-type': type }, body, duplex: 'half' } as RequestInit);
    expectError({ status: res.status, headers: res.headers, body: await res.json() }, 413, 'payload_too_large', null);
  });

  it('returns 400 when the endpoint is not a transcription endpoint', async () => {
    const res = await upload('chat', 'transcriptions', form({ model: 'm' }));
    expectError(res, 400, 'invalid_request', null);
    expect((res.body as { error: { message: string } }).error.message).toContain('needs a transcription endpoint');
  });

  it('authenticates before anything else', async () => {
    expectError(await upload('whisper', 'transcriptions', form({ model: 'm' }), 'svc_test_nope'), 401, 'invalid_api_key', null);
  });
});

describe('POST /v1/audio/translations', () => {
  it('goes to the upstream translation route', async () => {
    const res = await upload('whisper', 'translations', form({ model: 'm', response_format: 'verbose_json' }, wav('bonjour')));
    expect(res.body).toMatchObject({ task: 'translate', text: 'bonjour' });
    expect((await lastSimRequest(sim.url)).path).toBe('/v1/audio/translations');
  });

  it('refuses stream on translations', async () => {
    expectError(await upload('whisper', 'translations', form({ model: 'm', stream: 'true' })), 400, 'invalid_request', 'stream');
  });
});

describe('POST /v1/audio/speech', () => {
  const speech = (body: Record<string, unknown>, slug = 'tts'): Promise<Response> =>
    fetch(`${gw.url}/${PROJECT}/${slug}/v1/audio/speech`, { method: 'POST', headers: { authorization: `Bearer ${keys.full}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });

  it('streams the audio back, and that audio transcribes to the input', async () => {
    const res = await speech({ model: 'client-tts', input: 'round trip', voice: 'alloy', response_format: 'wav' });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('audio/wav');
    const audio = new Blob([await res.arrayBuffer()], { type: 'audio/wav' });
    expect(JSON.parse((await lastSimRequest(sim.url)).body)).toMatchObject({ model: 'sim-tts', input: 'round trip' });
    const back = await upload('whisper', 'transcriptions', form({ model: 'm' }, audio));
    expect(back.body).toMatchObject({ text: 'round trip' });
    const row = await ledger.waitForRow(res.headers.get('x-request-id') ?? '');
    expect(row).toMatchObject({ route: 'audio', endpoint_id: SPEECH_ID, status: 'completed', prompt_tokens: 3 });
  });

  it('relays an SSE audio stream and bills the usage it reports', async () => {
    const res = await speech({ model: 'm', input: 'stream me', voice: 'alloy', stream_format: 'sse' });
    expect(res.headers.get('content-type')).toBe('text/event-stream');
    const text = await res.text();
    expect(text).toContain('"type":"speech.audio.delta"');
    expect(text).toContain('"type":"speech.audio.done"');
    const row = await ledger.waitForRow(res.headers.get('x-request-id') ?? '');
    expect(row).toMatchObject({ usage_source: 'upstream', prompt_tokens: 3 });
  });

  // Regression: two speech.audio.delta frames, then a clean end with no error (the row said error).
  it('ends an SSE speech stream the model server cuts mid-stream with the error envelope, then [DONE], as chat does', async () => {
    const res = await speech({ model: 'tts-1', input: 'hello there general kenobi', voice: 'alloy', stream_format: 'sse', sim: { fail_after: 2 } });
    expect(res.status).toBe(200);
    const frames = parseSse(await res.text());
    expect(frames.map((f) => f.data.slice(0, 10))).toEqual(['{"type":"s', '{"type":"s', '{"error":{', '[DONE]']);
    expect(frames.slice(0, 2).map((f) => (JSON.parse(f.data) as { type: string }).type)).toEqual(['speech.audio.delta', 'speech.audio.delta']);
    expect(JSON.parse(frames[2]?.data ?? '')).toEqual({ error: { message: expect.any(String), type: 'server_error', code: 'internal_error', param: null } });
    expect(await ledger.waitForRow(res.headers.get('x-request-id') ?? '')).toMatchObject({ route: 'audio', status: 'error' });
  });

  it('ends an SSE speech stream the model leaves idle past the tier deadline with the timeout event and no [DONE]', async () => {
    const res = await speech({ model: 'm', input: 'slow words', voice: 'alloy', stream_format: 'sse', sim: { delay_ms: 2500 } }, 'tts-slow');
    const frames = parseSse(await res.text());
    expect(frames.map((f) => f.event)).toEqual([null, 'error']);
    expect(JSON.parse(frames[1]?.data ?? '')).toEqual({ error: { message: 'The model sent nothing for 0.6 s.', type: 'timeout_error', code: 'timeout', param: null } });
    expect(await ledger.waitForRow(res.headers.get('x-request-id') ?? '')).toMatchObject({ route: 'audio', status: 'timeout' });
  });

  it.each([
    [{ model: 'm', voice: 'alloy' }, 'input'],
    [{ model: 'm', input: 'x', voice: 'alloy', response_format: 'ogg' }, 'response_format'],
    [{ model: 'm', input: 'x', voice: 'alloy', speed: 9 }, 'speed'],
    [{ model: 'm', input: 'x' }, 'voice'],
    [{ input: 'x', voice: 'alloy' }, 'model'],
  ])('returns 400 naming the field for %j', async (body, param) => {
    const res = await speech(body);
    expectError({ status: res.status, headers: res.headers, body: await res.json() }, 400, 'invalid_request', param);
  });

  it('returns 400 on a transcription endpoint and maps upstream failures', async () => {
    const wrong = await speech({ model: 'm', input: 'x', voice: 'alloy' }, 'whisper');
    expectError({ status: wrong.status, headers: wrong.headers, body: await wrong.json() }, 400, 'invalid_request', null);
    const failed = await speech({ model: 'm', input: 'x', voice: 'alloy', sim: { error_status: 503 } });
    expectError({ status: failed.status, headers: failed.headers, body: await failed.json() }, 500, 'internal_error', null);
    await waitForSim(sim.url, (r) => r.path === '/v1/audio/speech' && r.body.includes('error_status'));
  });
});

describe('accounting', () => {
  it('records nothing for a request refused before the upstream', async () => {
    const res = await upload('whisper', 'transcriptions', form({ model: 'm' }, null));
    expect(res.status).toBe(400);
    // The ledger writes in order: once a later request's row is in, a row for the refused one would be too.
    const later = await upload('whisper', 'transcriptions', form({ model: 'm' }));
    expect(later.status, later.text).toBe(200);
    await ledger.waitForRow(later.headers.get('x-request-id') ?? '');
    expect(ledger.rowsFor(res.headers.get('x-request-id') ?? '')).toEqual([]);
  });
});

void call;
