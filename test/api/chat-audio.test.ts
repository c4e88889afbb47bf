/**
 * Audio in chat (SPEC "Message object", `modalities`/`audio`): input_audio parts transcribed through the
 * project's transcription endpoint before the model sees the turn, and modalities [text, audio] spoken
 * through the project's speech endpoint. The simulator's speech code makes both exact: audio made with
 * speak() transcribes back to its text, and the speech it returns decodes back to the answer. A stub
 * audio server plays a transcription and speech server that fails on demand.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseWav, pcm16ToWav } from '../../src/core/audio/wav.js';
import { decodeSpeech, silence, speak, SPEECH_SAMPLE_RATE } from '../../src/simulator/speech-codec.js';
import { AUDIO_CHAT_ID, audioTestConfig, SPEECH_ID, TRANSCRIBE_ID } from '../helpers/audio-config.js';
import { makeKeys, PROJECT, type TestKeys } from '../helpers/configs.js';
import { call, errorOf, expectError, type JsonResponse } from '../helpers/http.js';
import { mintTestKey, startGatewayProcess, startSimulatorProcess, type GatewayProcess, type SimulatorProcess } from '../helpers/processes.js';
import { lastSimRequest, simRequests, simSeq } from '../helpers/simulator-log.js';
import { openUsageDb, type UsageDb } from '../helpers/usage-db.js';

type Json = Record<string, unknown>;

/** A project with an audio-capable chat endpoint and no transcription endpoint. */
const QUIET_PROJECT = 'proj_quiet';
/** A project whose one generative endpoint takes audio, reached through the semantic-router route. */
const VOICE_PROJECT = 'proj_voice';
const VOICE_WS = 'ws_f0f0f0';
/** A project whose transcription endpoint has a budget of one token. */
const CAPPED_PROJECT = 'proj_capped';

let sim: SimulatorProcess;
/** Transcription and speech through the simulator. */
let gw: GatewayProcess;
/** Transcription and speech through the stub, which fails on demand. */
let failing: GatewayProcess;
/** features.audio_input: false. */
let audioOff: GatewayProcess;
let keys: TestKeys;
let quietKey: string;
let voiceKey: string;
let cappedKey: string;
let ledger: UsageDb;
let failingLedger: UsageDb;
let stub: Server;
const stubSeen: string[] = [];
let inFlight = 0;
let maxInFlight = 0;
const held: (() => void)[] = [];

function listener(id: string, upstream: string, extra: Json = {}): Json {
  return { id, slug: 'listener', name: 'Listener', kind: 'chat', tier: 'gpu', model: { id: 'model-listener', context_window: 65536, capabilities: ['audio_input'] }, upstream: { base_url: upstream, model: 'sim-chat' }, ...extra };
}

function extraProjects(upstream: string): Json[] {
  return [
    {
      id: QUIET_PROJECT,
      slug: 'quiet',
      endpoints: [listener('a8a8a8a8-a8a8-4a8a-8a8a-a8a8a8a8a8a8', upstream)],
      keys: [{ value: quietKey, scopes: ['inference'] }],
    },
    {
      id: VOICE_PROJECT,
      slug: 'voice',
      default_workspace: VOICE_WS,
      workspaces: [{ id: VOICE_WS, name: 'Voice' }],
      endpoints: [
        listener('b9b9b9b9-b9b9-4b9b-8b9b-b9b9b9b9b9b9', upstream, { router: { description: 'Anything said aloud', examples: ['hello there'] } }),
        { id: 'c0c0c0c0-c0c0-4c0c-8c0c-c0c0c0c0c0c0', slug: 'whisper', name: 'Whisper', kind: 'transcription', tier: 'gpu', model: { id: 'whisper', context_window: 8192 }, upstream: { base_url: upstream, model: 'sim-whisper' } },
      ],
      keys: [{ value: voiceKey, scopes: ['inference'] }],
    },
    {
      id: CAPPED_PROJECT,
      slug: 'capped',
      endpoints: [
        listener('d1d1d1d1-d1d1-4d1d-8d1d-d1d1d1d1d1d1', upstream),
        { id: 'e2e2e2e2-e2e2-4e2e-8e2e-e2e2e2e2e2e2', slug: 'whisper', name: 'Whisper', kind: 'transcription', tier: 'gpu', model: { id: 'whisper', context_window: 8192 }, upstream: { base_url: upstream, model: 'sim-whisper' }, budget: { hard_cap_tokens: 1 } },
      ],
      keys: [{ value: cappedKey, scopes: ['inference'] }],
    },
  ];
}

/** The stub audio server: `status-NNN` in an upload answers NNN; `hold-pair` waits for a second upload. */
function serveStub(req: IncomingMessage, res: ServerResponse): void {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const body = Buffer.concat(chunks).toString('latin1');
    stubSeen.push(`${req.url} ${body.length}`);
    const json = (status: number, value: unknown): void => void res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(value));
    const refuse = (status: number, param: string): void => json(status, { error: { message: 'the stub refuses', type: 'invalid_request_error', code: 'stub', param } });
    if (req.url === '/v1/audio/speech') {
      const speech = JSON.parse(body) as { voice?: string };
      return speech.voice === 'nobody' ? refuse(400, 'voice') : refuse(500, 'input');
    }
    if (body.includes('hold-pair')) {
      // Held until two are in flight at once: sequential calls would wait here until the fallback fires.
      inFlight += 1;
      maxInFlight = Math.max(maxInFlight, inFlight);
      held.push(() => {
        inFlight -= 1;
        json(200, { text: 'held' });
      });
      if (inFlight >= 2) held.splice(0).forEach((r) => r());
      else setTimeout(() => held.splice(0).forEach((r) => r()), 1000);
      return;
    }
    const status = /status-(\d{3})/.exec(body)?.[1];
    if (status) return refuse(Number(status), 'file');
    if (body.includes('not-json')) return void res.writeHead(200, { 'content-type': 'text/plain' }).end('plain words');
    json(200, { text: 'stub transcript' });
  });
}

beforeAll(async () => {
  keys = makeKeys();
  quietKey = mintTestKey('quiet');
  voiceKey = mintTestKey('voice');
  cappedKey = mintTestKey('capped');
  stub = createServer(serveStub);
  await new Promise<void>((r) => stub.listen(0, '127.0.0.1', r));
  const stubUrl = `http://127.0.0.1:${(stub.address() as AddressInfo).port}/v1`;
  sim = await startSimulatorProcess();
  const failingConfig = audioTestConfig(sim.url, keys);
  for (const e of failingConfig.projects[0]?.endpoints as Json[]) {
    if (e.id === TRANSCRIBE_ID || e.id === SPEECH_ID) e.upstream = { ...(e.upstream as Json), base_url: stubUrl };
  }
  const offConfig = { ...audioTestConfig(sim.url, keys), features: { audio_input: false } };
  [gw, failing, audioOff] = await Promise.all([
    startGatewayProcess(audioTestConfig(sim.url, keys, { extraProjects: extraProjects(sim.url) })),
    startGatewayProcess(failingConfig),
    startGatewayProcess(offConfig),
  ]);
  ledger = openUsageDb(gw.dbPath);
  failingLedger = openUsageDb(failing.dbPath);
});

afterAll(async () => {
  ledger?.close();
  failingLedger?.close();
  await Promise.all([gw?.stop(), failing?.stop(), audioOff?.stop()]);
  await sim?.stop();
  stub?.closeAllConnections();
  await new Promise((r) => stub?.close(r));
});

/** `text` spoken in the simulator's speech code, as a base64 WAV file. */
const spoken = (text: string): string => pcm16ToWav(Buffer.concat([silence(20), speak(text), silence(20)]), SPEECH_SAMPLE_RATE).toString('base64');
const audioPart = (data: string, format = 'wav'): Json => ({ type: 'input_audio', input_audio: { data, format } });
const marker = (text: string): Json => audioPart(Buffer.from(text).toString('base64'), 'mp3');
const says = (...content: Json[]): Json => ({ model: 'client-model', messages: [{ role: 'user', content }] });

function chat(target: GatewayProcess, body: Json | string, opts: { key?: string; path?: string } = {}): Promise<JsonResponse> {
  const path = opts.path ?? `/${PROJECT}/listener/v1/chat/completions`;
  return call(`${target.url}${path}`, { key: opts.key ?? keys.full, body, ...(typeof body === 'string' ? { headers: { 'content-type': 'application/json' } } : {}) });
}

function expectAudioError(res: JsonResponse, status: number, type: string, code: string, param: string | null): void {
  expectError(res, status, code, param);
  expect(errorOf(res).type).toBe(type);
}

const requestId = (res: JsonResponse): string => res.headers.get('x-request-id') ?? '';
const message = (res: JsonResponse, choice = 0): Json => ((res.body as { choices: { message: Json }[] }).choices[choice] as { message: Json }).message;

describe('input_audio parts in chat', () => {
  it('transcribes the audio through the transcription endpoint and sends the model its transcript as a text part', async () => {
    const data = spoken('echo: hello from the microphone');
    const raw = `{"model":"client-model","temperature":0.50,  "messages":[{"role":"user","content":[{"type":"input_audio","input_audio":{"data":"${data}","format":"wav"}},{"type":"text","text":"over"}]}]}`;
    const res = await chat(gw, raw);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const [sent, transcription] = await simRequests(sim.url, 2);
    expect(sent?.path).toBe('/v1/chat/completions');
    expect(sent?.body).toBe(
      '{"model":"sim-chat","temperature":0.50,  "messages":[{"role":"user","content":[{"type":"text","text":"echo: hello from the microphone"},{"type":"text","text":"over"}]}]}',
    );
    expect(transcription?.path).toBe('/v1/audio/transcriptions');
    expect(JSON.parse(transcription?.body ?? '{}')).toEqual({
      fields: { model: 'sim-whisper', response_format: 'json' },
      files: [{ name: 'file', filename: 'audio.wav', content_type: 'audio/wav', bytes: Buffer.from(data, 'base64').length }],
      order: ['model', 'response_format', 'file'],
    });
    // The simulator reads text parts joined by a newline: its echo shows the model read the transcript.
    expect(message(res).content).toBe('hello from the microphone\nover');
  });

  it('records one audio usage row per transcription, on the transcription endpoint, beside the chat row', async () => {
    const res = await chat(gw, says(audioPart(spoken('echo: one')), { type: 'text', text: 'then' }, audioPart(spoken('two'))));
    expect(res.status).toBe(200);
    const id = requestId(res);
    const first = await ledger.waitForRow(`${id}:messages[0].content[0]`);
    const second = await ledger.waitForRow(`${id}:messages[0].content[2]`);
    const turn = await ledger.waitForRow(id);
    for (const row of [first, second]) {
      expect(row).toMatchObject({ route: 'audio', endpoint_id: TRANSCRIBE_ID, status: 'completed', usage_source: 'upstream', service_tier: 'default', tier_multiplier: 1 });
    }
    // The simulator reports ceil(ms / 100) audio tokens and ceil(bytes / 4) text tokens: "two" is 3 bytes.
    expect(second.completion_tokens).toBe(1);
    expect(second.prompt_tokens).toBe(1);
    expect(turn).toMatchObject({ route: 'chat', endpoint_id: AUDIO_CHAT_ID, status: 'completed' });
    expect(ledger.rowsFor(id)).toHaveLength(1);
  });

  it('serves the semantic-router route through the same turn', async () => {
    const res = await chat(gw, says(audioPart(spoken('echo: routed and heard'))), { key: voiceKey, path: `/${VOICE_PROJECT}/${VOICE_WS}/_semantic/router/v1/chat/completions` });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(message(res).content).toBe('routed and heard');
    expect((await lastSimRequest(sim.url)).body).toContain('{"type":"text","text":"echo: routed and heard"}');
  });

  it('returns 400 naming the part when the project has no transcription endpoint, without calling anything', async () => {
    const before = await simSeq(sim.url);
    const res = await chat(gw, says({ type: 'text', text: 'hi' }, audioPart(spoken('hello'))), { key: quietKey, path: `/${QUIET_PROJECT}/listener/v1/chat/completions` });
    expectAudioError(res, 400, 'invalid_request_error', 'invalid_request', 'messages[0].content[1]');
    expect(errorOf(res).message).toMatch(/no active one/);
    expect(await simSeq(sim.url)).toBe(before);
  });

  it("returns 429 once the transcription endpoint's budget is spent, without transcribing", async () => {
    const path = `/${CAPPED_PROJECT}/listener/v1/chat/completions`;
    expect((await chat(gw, says(audioPart(spoken('spend it'))), { key: cappedKey, path })).status).toBe(200);
    const before = await simSeq(sim.url);
    expectAudioError(await chat(gw, says(audioPart(spoken('too late'))), { key: cappedKey, path }), 429, 'rate_limit_error', 'endpoint_budget_exhausted', null);
    expect(await simSeq(sim.url)).toBe(before);
  });

  it.each([
    ['data that is not base64', audioPart('not base64!'), 'messages[0].content[0].input_audio.data'],
    ['a data: URL instead of base64', audioPart('data:audio/wav;base64,AAAA'), 'messages[0].content[0].input_audio.data'],
    ['a format that is not a plain name', audioPart('AAAA', 'wav"\r\nX-Injected: 1'), 'messages[0].content[0].input_audio.format'],
  ])('returns 400 for %s, before any upstream call', async (_, part, param) => {
    const before = await simSeq(sim.url);
    expectAudioError(await chat(gw, says(part)), 400, 'invalid_request_error', 'invalid_request', param);
    expect(await simSeq(sim.url)).toBe(before);
  });

  it('refuses audio parts with 400 when the operator turned audio input off', async () => {
    const before = await simSeq(sim.url);
    const res = await chat(audioOff, says(audioPart(spoken('hello'))));
    expectAudioError(res, 400, 'invalid_request_error', 'invalid_request', 'messages[0].content[0]');
    expect(errorOf(res).message).toMatch(/audio input is turned off/);
    expect(await simSeq(sim.url)).toBe(before);
  });
});

describe('input_audio parts when the transcription server fails', () => {
  it('transcribes the parts of one request in parallel', async () => {
    maxInFlight = 0;
    const res = await chat(failing, says(marker('hold-pair a'), marker('hold-pair b')));
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(maxInFlight).toBe(2);
    expect((await lastSimRequest(sim.url)).body).toContain('"content":[{"type":"text","text":"held"},{"type":"text","text":"held"}]');
  });

  it.each([
    ['a 400', 'status-400', 400, 'invalid_request_error', 'invalid_request'],
    ['a 500', 'status-500', 500, 'server_error', 'internal_error'],
    ['a response that is not JSON', 'not-json', 500, 'server_error', 'internal_error'],
  ])('answers %s with the error envelope naming the part, and never calls the model', async (_, audio, status, type, code) => {
    const before = await simSeq(sim.url);
    const res = await chat(failing, says({ type: 'text', text: 'hi' }, marker(audio)));
    expectAudioError(res, status, type, code, 'messages[0].content[1]');
    expect(errorOf(res).message).toMatch(/^messages\[0\]\.content\[1\] could not be transcribed by endpoint whisper: /);
    expect(await simSeq(sim.url)).toBe(before);
    const row = await failingLedger.waitForRow(`${requestId(res)}:messages[0].content[1]`);
    expect(row).toMatchObject({ route: 'audio', endpoint_id: TRANSCRIBE_ID, status: 'error', prompt_tokens: 0, completion_tokens: 0 });
    expect(failingLedger.rowsFor(requestId(res))).toEqual([]);
  });

  it('names the first failing part in request order when several fail', async () => {
    const res = await chat(failing, says(marker('fine'), marker('status-500'), marker('status-400')));
    expectAudioError(res, 500, 'server_error', 'internal_error', 'messages[0].content[1]');
  });
});

describe('modalities [text, audio]', () => {
  const speakBack = (text: string, extra: Json = {}): Json => ({ model: 'client-model', modalities: ['text', 'audio'], audio: { voice: 'alloy', format: 'wav' }, messages: [{ role: 'user', content: `echo: ${text}` }], ...extra });

  it('speaks the answer through the speech endpoint into message.audio, and asks the model for text only', async () => {
    const raw = '{"model":"client-model", "modalities":["text","audio"],"audio":{"voice":"alloy","format":"wav"},"temperature":0.5,"messages":[{"role":"user","content":"echo: good morning"}]}';
    const res = await chat(gw, raw);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const msg = message(res);
    expect(msg.content).toBe('good morning');
    const audio = msg.audio as { id: string; data: string; expires_at: number; transcript: string };
    expect(Object.keys(audio)).toEqual(['id', 'data', 'expires_at', 'transcript']);
    expect(audio.id).toMatch(/^audio_[0-9a-f]{24}$/);
    expect(audio.transcript).toBe('good morning');
    expect(audio.expires_at).toBe((res.body as { created: number }).created);
    const wav = parseWav(Buffer.from(audio.data, 'base64'));
    expect(wav && decodeSpeech(wav.data)).toBe('good morning');
    const [speech, sent] = await simRequests(sim.url, 2);
    expect(sent?.body).toBe('{"model":"sim-chat","temperature":0.5,"messages":[{"role":"user","content":"echo: good morning"}]}');
    expect(speech?.path).toBe('/v1/audio/speech');
    expect(JSON.parse(speech?.body ?? '{}')).toEqual({ model: 'sim-tts', input: 'good morning', voice: 'alloy', response_format: 'wav' });
    const row = await ledger.waitForRow(`${requestId(res)}:choices[0].message.audio`);
    expect(row).toMatchObject({ route: 'audio', endpoint_id: SPEECH_ID, status: 'completed', prompt_tokens: 3, completion_tokens: 0 });
    expect((await ledger.waitForRow(requestId(res))).route).toBe('chat');
  });

  it('maps pcm16 to raw PCM and defaults to alloy and WAV when audio is omitted', async () => {
    const pcm = await chat(gw, speakBack('raw samples', { audio: { voice: 'verse', format: 'pcm16' } }));
    expect(pcm.status).toBe(200);
    expect(decodeSpeech(Buffer.from((message(pcm).audio as { data: string }).data, 'base64'))).toBe('raw samples');
    expect(JSON.parse((await lastSimRequest(sim.url)).body)).toMatchObject({ voice: 'verse', response_format: 'pcm' });
    const { audio: _omitted, ...bare } = speakBack('defaults');
    expect((await chat(gw, bare)).status).toBe(200);
    expect(JSON.parse((await lastSimRequest(sim.url)).body)).toMatchObject({ voice: 'alloy', response_format: 'wav' });
  });

  it('speaks every choice that has text', async () => {
    const res = await chat(gw, speakBack('twice', { n: 2 }));
    expect(res.status).toBe(200);
    for (const k of [0, 1]) expect((message(res, k).audio as { transcript: string }).transcript).toBe(message(res, k).content);
  });

  it('hears and answers aloud in one turn', async () => {
    const res = await chat(gw, { model: 'm', modalities: ['text', 'audio'], audio: { voice: 'alloy', format: 'wav' }, messages: [{ role: 'user', content: [audioPart(spoken('echo: round trip'))] }] });
    expect(res.status).toBe(200);
    const wav = parseWav(Buffer.from((message(res).audio as { data: string }).data, 'base64'));
    expect(wav && decodeSpeech(wav.data)).toBe('round trip');
  });

  it('forwards modalities [text] as sent', async () => {
    const raw = '{"model":"m","modalities":["text"],"messages":[{"role":"user","content":"echo: plain"}]}';
    const res = await chat(gw, raw);
    expect(res.status).toBe(200);
    expect(message(res).audio).toBeUndefined();
    expect((await lastSimRequest(sim.url)).body).toBe(raw.replace('"model":"m"', '"model":"sim-chat"'));
  });

  it.each([
    ['streaming', { stream: true }, 'unsupported_value', 'stream'],
    ['a format the speech route cannot produce', { audio: { voice: 'alloy', format: 'ogg' } }, 'unsupported_value', 'audio.format'],
  ])('returns 400 for %s, before the model is called', async (_, extra, code, param) => {
    const before = await simSeq(sim.url);
    expectAudioError(await chat(gw, speakBack('no', extra)), 400, 'invalid_request_error', code, param);
    expect(await simSeq(sim.url)).toBe(before);
  });

  it.each([
    ['a 400 about the voice', 'nobody', 400, 'invalid_request_error', 'invalid_request', 'audio.voice'],
    ['a 500', 'alloy', 500, 'server_error', 'internal_error', 'modalities'],
  ])('answers a speech failure (%s) with the error envelope once the turn is billed', async (_, voice, status, type, code, param) => {
    const res = await chat(failing, speakBack('unspoken', { audio: { voice, format: 'wav' } }));
    expectAudioError(res, status, type, code, param);
    expect(errorOf(res).message).toMatch(/^The answer could not be spoken by endpoint tts: /);
    expect(await failingLedger.waitForRow(requestId(res))).toMatchObject({ route: 'chat', status: 'completed' });
    expect(await failingLedger.waitForRow(`${requestId(res)}:choices[0].message.audio`)).toMatchObject({ route: 'audio', endpoint_id: SPEECH_ID, status: 'error' });
  });
});
