/**
 * WS /{project}/{endpoint}/v1/realtime: the realtime transcription protocol in both modes (segment: the
 * gateway cuts audio on commit or VAD and calls the transcription route; relay: frames bridged to the
 * simulator's realtime socket), over real WebSocket clients against real processes.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silence, speak } from '../../src/simulator/speech-codec.js';
import { audioTestConfig, RELAY_ID, SEGMENT_ID } from '../helpers/audio-config.js';
import { makeKeys, PROJECT, type TestKeys } from '../helpers/configs.js';
import { mintTestKey, startGatewayProcess, startSimulatorProcess, type GatewayProcess, type SimulatorProcess } from '../helpers/processes.js';
import { isRefused, rawWebSocket, type RawWs } from '../helpers/raw-ws.js';
import { appendEvent, chunks, openRealtime, type RealtimeClient } from '../helpers/realtime-client.js';
import { waitForSim } from '../helpers/simulator-log.js';
import { advanceClock } from '../helpers/http.js';
import { openUsageDb, type UsageDb } from '../helpers/usage-db.js';

let sim: SimulatorProcess;
let gw: GatewayProcess;
let keys: TestKeys;
let ledger: UsageDb;
/** Keys with a quota of 2 requests a minute: the upgrade, then one segment; the next segment is refused. */
const segmentQuotaKey = mintTestKey('test');
const relayQuotaKey = mintTestKey('test');

beforeAll(async () => {
  keys = makeKeys();
  sim = await startSimulatorProcess();
  const quota = { scopes: ['inference'], quota_requests: 2, quota_window: 60 };
  gw = await startGatewayProcess(audioTestConfig(sim.url, keys, { extraKeys: [{ value: segmentQuotaKey, ...quota }, { value: relayQuotaKey, ...quota }] }));
  ledger = openUsageDb(gw.dbPath);
});

afterAll(async () => {
  ledger?.close();
  await gw?.stop();
  await sim?.stop();
});

const wsUrl = (slug: string): string => `${gw.url.replace(/^http/, 'ws')}/${PROJECT}/${slug}/v1/realtime`;
const path = (slug: string): string => `/${PROJECT}/${slug}/v1/realtime`;
const port = (): number => Number(new URL(gw.url).port);

async function manualSession(slug = 'live'): Promise<RealtimeClient> {
  const c = await openRealtime(wsUrl(slug), { key: keys.full });
  await c.next('transcription_session.created');
  c.send({ type: 'transcription_session.update', session: { turn_detection: null, input_audio_transcription: { model: 'client-model' } } });
  await c.next('transcription_session.updated');
  return c;
}

function expectErrorEvent(e: Record<string, unknown>, code: string, param: string | null, eventId: string | null = null): void {
  const error = e.error as Record<string, unknown>;
  expect({ type: e.type, code: error.code, param: error.param, event_id: error.event_id }).toEqual({ type: 'error', code, param, event_id: eventId });
  expect(typeof error.type).toBe('string');
  expect(String(error.message).length).toBeGreaterThan(0);
}

describe('segment mode', () => {
  it('transcribes a committed buffer through the transcription route and echoes the client model', async () => {
    const c = await openRealtime(wsUrl('live'), { key: keys.full });
    const created = await c.next('transcription_session.created');
    expect(created.session).toMatchObject({ object: 'realtime.transcription_session', input_audio_format: 'pcm16', input_audio_transcription: { model: 'model-live' } });
    c.send({ type: 'transcription_session.update', session: { turn_detection: null, input_audio_transcription: { model: 'client-model', language: 'en' } } });
    const updated = await c.next('transcription_session.updated');
    expect(updated.session).toMatchObject({ turn_detection: null, input_audio_transcription: { model: 'client-model', language: 'en' } });
    for (const part of chunks(speak('hello there'))) c.send(appendEvent(part));
    c.send({ type: 'input_audio_buffer.commit' });
    const committed = await c.next('input_audio_buffer.committed');
    const delta = await c.next('conversation.item.input_audio_transcription.delta');
    const done = await c.next('conversation.item.input_audio_transcription.completed');
    expect(committed).toMatchObject({ previous_item_id: null });
    expect(delta).toMatchObject({ item_id: committed.item_id, delta: 'hello there' });
    expect(done).toMatchObject({ item_id: committed.item_id, content_index: 0, transcript: 'hello there', usage: { type: 'tokens' } });
    const upstream = await waitForSim(sim.url, (r) => r.path === '/v1/audio/transcriptions' && r.body.includes('item_'));
    expect(JSON.parse(upstream.body)).toMatchObject({ fields: { model: 'sim-whisper', response_format: 'json', language: 'en' }, files: [{ content_type: 'audio/wav' }] });
    const row = await ledger.waitForRow(String(committed.item_id));
    expect(row).toMatchObject({ route: 'realtime', endpoint_id: SEGMENT_ID, status: 'completed', usage_source: 'upstream' });
    c.close();
    expect((await c.closed()).code).toBe(1005);
  });

  it('cuts segments with server VAD and emits transcripts in order', async () => {
    const c = await openRealtime(wsUrl('live'), { key: keys.full });
    await c.next('transcription_session.created');
    const audio = Buffer.concat([silence(100), speak('first words'), silence(400), speak('then more'), silence(400), speak('last one'), silence(400)]);
    for (const part of chunks(audio)) c.send(appendEvent(part));
    const started = await c.next('input_audio_buffer.speech_started');
    const stopped = await c.next('input_audio_buffer.speech_stopped');
    expect(started.item_id).toBe(stopped.item_id);
    expect(started.audio_start_ms).toBe(0); // speech at 100 ms, minus 100 ms of prefix padding
    // Regression: audio_end_ms was 220, the end of the last speech frame; OpenAI's includes the silence
    // that confirmed the stop ("the end of audio sent to the model"). Speech ends at 210 ms, inside the
    // 20 ms frame [200, 220); 200 ms of silence (silence_ms here) confirm it.
    expect(stopped.audio_end_ms).toBe(420);
    const transcripts: string[] = [];
    for (let i = 0; i < 3; i++) transcripts.push(String((await c.next('conversation.item.input_audio_transcription.completed')).transcript));
    expect(transcripts).toEqual(['first words', 'then more', 'last one']);
    const committed = c.events.filter((e) => e.type === 'input_audio_buffer.committed');
    expect(committed.map((e) => e.previous_item_id)).toEqual([null, committed[0]?.item_id, committed[1]?.item_id]);
    c.close();
  });

  // Regression: an update rebuilt the VAD, whose positions then counted from zero again (900 ms, not 1500).
  it('reports speech positions from the session start after an update that rebuilds the VAD', async () => {
    const c = await openRealtime(wsUrl('live'), { key: keys.full });
    await c.next('transcription_session.created');
    // Ten symbols of 10 ms each: every part is a whole number of 20 ms frames.
    for (const part of chunks(Buffer.concat([silence(100), speak('first turn'), silence(400)]))) c.send(appendEvent(part));
    expect((await c.next('input_audio_buffer.speech_started')).audio_start_ms).toBe(0);
    expect((await c.next('input_audio_buffer.speech_stopped')).audio_end_ms).toBe(400);
    c.send({ type: 'transcription_session.update', session: { input_audio_transcription: { language: 'de' } } });
    await c.next('transcription_session.updated');
    for (const part of chunks(Buffer.concat([silence(1000), speak('second one'), silence(400)]))) c.send(appendEvent(part));
    const started = await c.next('input_audio_buffer.speech_started');
    const stopped = await c.next('input_audio_buffer.speech_stopped');
    // Speech at 1600 ms, minus the 100 ms prefix padding; it ends at 1700 ms, and 200 ms of silence confirm it.
    expect({ start: started.audio_start_ms, end: stopped.audio_end_ms }).toEqual({ start: 1500, end: 1900 });
    expect((await c.next('conversation.item.input_audio_transcription.completed')).transcript).toBe('first turn');
    expect((await c.next('conversation.item.input_audio_transcription.completed')).transcript).toBe('second one');
    c.close();
  });

  it('answers every bad message with an error event and keeps the session', async () => {
    const c = await manualSession();
    const cases: [string | Buffer, string, string | null, string | null][] = [
      ['not json', 'invalid_json', null, null],
      [JSON.stringify({ type: 'response.create', event_id: 'e1' }), 'unknown_event', 'type', 'e1'],
      [JSON.stringify({ event_id: 'e2' }), 'invalid_request', 'type', 'e2'],
      [JSON.stringify({ type: 'input_audio_buffer.append', audio: '@@@', event_id: 'e3' }), 'invalid_request', 'audio', 'e3'],
      [JSON.stringify({ type: 'input_audio_buffer.append', audio: Buffer.from([1, 2, 3]).toString('base64') }), 'invalid_request', 'audio', null],
      [JSON.stringify({ type: 'input_audio_buffer.append' }), 'invalid_request', 'audio', null],
      [JSON.stringify({ type: 'transcription_session.update', session: { input_audio_format: 'g711_ulaw' } }), 'invalid_request', 'session.input_audio_format', null],
      [JSON.stringify({ type: 'transcription_session.update', session: { turn_detection: { type: 'semantic_vad' } } }), 'invalid_request', 'session.turn_detection.type', null],
      [JSON.stringify({ type: 'input_audio_buffer.commit', event_id: 'e4' }), 'input_audio_buffer_commit_empty', null, 'e4'],
      [Buffer.from([1, 2, 3]), 'invalid_request', null, null],
    ];
    for (const [frame, code, param, id] of cases) {
      c.ws.send(frame);
      expectErrorEvent(await c.next('error'), code, param, id);
    }
    c.send(appendEvent(speak('still alive')));
    c.send({ type: 'input_audio_buffer.commit' });
    expect((await c.next('conversation.item.input_audio_transcription.completed')).transcript).toBe('still alive');
    c.close();
  });

  // Regression: any language was accepted and sent upstream with every segment (the HTTP route refuses it).
  it('refuses a language that is not an ISO-639 code, as the transcriptions route does, and keeps the previous one', async () => {
    const c = await manualSession();
    c.send({ type: 'transcription_session.update', session: { input_audio_transcription: { language: 'de' } } });
    await c.next('transcription_session.updated');
    c.send({ type: 'transcription_session.update', event_id: 'bad-language', session: { input_audio_transcription: { language: 'english!!' } } });
    const error = await c.next('error');
    expectErrorEvent(error, 'invalid_request', 'session.input_audio_transcription.language', 'bad-language');
    expect((error.error as { message: string }).message).toContain('ISO-639');
    c.send(appendEvent(speak('language kept')));
    c.send({ type: 'input_audio_buffer.commit' });
    expect((await c.next('conversation.item.input_audio_transcription.completed')).transcript).toBe('language kept');
    const upstream = await waitForSim(sim.url, (r) => r.path === '/v1/audio/transcriptions' && r.body.includes('"language":"'));
    expect((JSON.parse(upstream.body) as { fields: Record<string, string> }).fields.language).toBe('de');
    expect(c.events.filter((e) => e.type === 'transcription_session.updated')).toHaveLength(2);
    c.close();
  });

  it('clears the buffer on input_audio_buffer.clear', async () => {
    const c = await manualSession();
    c.send(appendEvent(speak('forget this')));
    c.send({ type: 'input_audio_buffer.clear' });
    await c.next('input_audio_buffer.cleared');
    c.send({ type: 'input_audio_buffer.commit' });
    expectErrorEvent(await c.next('error'), 'input_audio_buffer_commit_empty', null);
    c.close();
  });

  it('closes an idle session with an error event', async () => {
    const c = await openRealtime(wsUrl('live-idle'), { key: keys.full });
    await c.next('transcription_session.created');
    expectErrorEvent(await c.next('error', 3000), 'session_idle_timeout', null);
    expect((await c.closed()).code).toBe(1000);
  });

  it('drops a client that stops reading once its cap is reached, with a last error and close 1008', async () => {
    const raw = (await rawWebSocket(port(), path('live'), { authorization: `Bearer ${keys.full}` })) as RawWs;
    raw.socket.pause();
    raw.sendText(JSON.stringify({ type: 'transcription_session.update', session: { turn_detection: null } }));
    // One-sample symbols: about as many event bytes come back as audio bytes go in.
    const segment = appendEvent(speak('x'.repeat(100_000), { symbolMs: 0.04 }));
    const frame = JSON.stringify(segment);
    for (let i = 0; i < 80 && !raw.socket.destroyed; i++) {
      raw.sendText(frame);
      raw.sendText('{"type":"input_audio_buffer.commit"}');
      if (i % 8 === 7) await new Promise((r) => setTimeout(r, 20));
    }
    const sessionRow = await waitForSessionRow('error');
    expect(sessionRow.route).toBe('realtime');
    raw.socket.resume();
    const until = Date.now() + 10_000;
    while (!raw.frames.some((f) => typeof f !== 'string') && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
    const texts = raw.frames.filter((f): f is string => typeof f === 'string');
    const last = JSON.parse(texts[texts.length - 1] ?? '{}') as Record<string, unknown>;
    expectErrorEvent(last, 'client_too_slow', null);
    expect(raw.frames[raw.frames.length - 1]).toMatchObject({ close: 1008 });
    raw.socket.destroy();
  });
});

// Regression: uWS's own message limit dropped the TCP connection, so clients saw 1006 where
// docs/realtime.md promises the close frame 1009.
describe('message cap (audio.realtime_max_message_bytes, 4 MiB here)', () => {
  const CAP = 4 * 1024 * 1024;

  it.each([
    ['one byte over', CAP + 1],
    ['half as large again', CAP * 1.5],
    // Issue 31: past twice the cap, uWS's own limit still dropped the connection (1006).
    ['of 10 MiB, 2.5 times', 10 * 1024 * 1024],
    ['of 16 MiB, 4 times', 16 * 1024 * 1024],
  ])('closes with 1009 on a message %s the cap, and records the session as error', async (_label, bytes) => {
    const raw = (await rawWebSocket(port(), path('live'), { authorization: `Bearer ${keys.full}` })) as RawWs;
    const requestId = raw.headers['x-request-id'] ?? '';
    expect(requestId).toMatch(/^req_/);
    raw.sendText('x'.repeat(bytes));
    // Until the close frame, or until the connection is gone without one (what uWS's own limit did).
    const until = Date.now() + 10_000;
    while (!raw.frames.some((f) => typeof f !== 'string') && !raw.socket.destroyed && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
    expect(raw.frames.find((f) => typeof f !== 'string')).toEqual({ close: 1009, reason: `message of ${bytes} bytes: the limit is ${CAP}` });
    expect((await ledger.waitForRow(requestId)).status).toBe('error');
    raw.socket.destroy();
  });

  // Regression: a frame past uWS's own ceiling (16 times the cap) is dropped from its header, without a
  // close frame (the client sees 1006); the session row said `aborted`, as for a client that vanished,
  // where the same refusal of a smaller message (1009, above) says `error`.
  it('records the session as error when a frame declares more than uWS takes, and the connection is dropped', async () => {
    const raw = (await rawWebSocket(port(), path('live'), { authorization: `Bearer ${keys.full}` })) as RawWs;
    const requestId = raw.headers['x-request-id'] ?? '';
    const closed = new Promise<void>((resolve) => raw.socket.once('close', () => resolve()));
    // A masked text frame's header declaring one byte more than the ceiling; no payload follows.
    const head = Buffer.alloc(14);
    head[0] = 0x81;
    head[1] = 0x80 | 127;
    head.writeBigUInt64BE(BigInt(16 * CAP + 1), 2);
    raw.socket.write(head);
    await closed;
    expect(raw.frames.some((f) => typeof f !== 'string')).toBe(false);
    expect((await ledger.waitForRow(requestId)).status).toBe('error');
  });

  it('still takes an append just under the cap', async () => {
    const c = await manualSession();
    // The event's JSON is 47 bytes plus the base64: 3,145,692 bytes of audio make a 4,194,303-byte message.
    const message = JSON.stringify(appendEvent(Buffer.alloc(3_145_692)));
    expect(message.length).toBe(CAP - 1);
    c.ws.send(message);
    c.send({ type: 'input_audio_buffer.clear' });
    await c.next('input_audio_buffer.cleared');
    c.close();
  });
});

/** A session on `slug` with server VAD off that commits two segments: the second is past a quota of one. */
async function twoSegments(slug: string, key: string): Promise<Awaited<ReturnType<typeof openRealtime>>> {
  const c = await openRealtime(wsUrl(slug), { key });
  await c.next('transcription_session.created');
  c.send({ type: 'transcription_session.update', session: { turn_detection: null } });
  await c.next('transcription_session.updated');
  for (const words of ['within quota', 'past quota']) {
    c.send(appendEvent(speak(words)));
    c.send({ type: 'input_audio_buffer.commit' });
  }
  return c;
}

/** The error of the 429 a chat request with this (spent) key gets: what the socket's refusal must match. */
async function http429(key: string): Promise<Record<string, unknown>> {
  const res = await fetch(`${gw.url}/${PROJECT}/chat/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }),
  });
  expect(res.status).toBe(429);
  return ((await res.json()) as { error: Record<string, unknown> }).error;
}

function expectRetryHints(onSocket: Record<string, unknown>, overHttp: Record<string, unknown>): void {
  expect({ code: onSocket.code, type: onSocket.type }).toEqual({ code: overHttp.code, type: overHttp.type });
  const after = onSocket.retry_after as number;
  expect(Number.isInteger(after) && after > 0).toBe(true);
  // A second may pass between the two refusals.
  expect(Math.abs(after - (overHttp.retry_after as number))).toBeLessThanOrEqual(1);
  const { initial_delay_ms: initial, max_delay_ms: max, ...rest } = onSocket.retry_strategy as Record<string, unknown>;
  const { initial_delay_ms: _i, max_delay_ms: _m, ...httpRest } = overHttp.retry_strategy as Record<string, unknown>;
  expect(rest).toEqual(httpRest);
  expect({ initial, max }).toEqual({ initial: after * 1000, max: 60_000 });
}

/** The newest realtime session row with the given status (session rows carry the upgrade's req_ id). */
async function waitForSessionRow(status: string): Promise<{ route: string; status: string }> {
  const until = Date.now() + 15_000;
  for (;;) {
    const row = ledger.recent(200).find((r) => r.request_id.startsWith('req_') && r.route === 'realtime' && r.status === status);
    if (row) return row;
    if (Date.now() > until) throw new Error(`no realtime session row with status ${status}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

describe('relay mode', () => {
  it('bridges the session to the upstream socket with the endpoint model and accounts each transcript', async () => {
    const c = await openRealtime(wsUrl('live-relay'), { key: keys.full });
    const created = await c.next('transcription_session.created');
    expect(created.session).toMatchObject({ id: 'sess_sim' });
    c.send({ type: 'transcription_session.update', session: { turn_detection: null, input_audio_transcription: { model: 'client-model' } } });
    const updated = await c.next('transcription_session.updated');
    expect(updated.session).toMatchObject({ input_audio_transcription: { model: 'client-model' } });
    c.send(appendEvent(speak('relayed words')));
    c.send({ type: 'input_audio_buffer.commit' });
    const committed = await c.next('input_audio_buffer.committed');
    expect((await c.next('conversation.item.input_audio_transcription.completed')).transcript).toBe('relayed words');
    const deltas = c.events.filter((e) => e.type === 'conversation.item.input_audio_transcription.delta').map((e) => e.delta);
    expect(deltas).toEqual(['relayed', ' words']);
    const row = await ledger.waitForRow(String(committed.item_id));
    expect(row).toMatchObject({ route: 'realtime', endpoint_id: RELAY_ID, status: 'completed', usage_source: 'upstream' });
    c.close();
    const upstream = await waitForSim(sim.url, (r) => r.path === '/v1/realtime' && r.completed && r.body.includes('relayed') === false && r.body.includes('client-model') === false && r.body.includes('sim-realtime'));
    expect(upstream.headers['openai-beta']).toBe('realtime=v1');
  });

  // Regression: every update went up with input_audio_transcription: {model}, which replaced the upstream
  // session's language and prompt set by an earlier update; the echo then showed the model alone.
  it('keeps the language and prompt of an earlier update when a later one leaves the transcription out', async () => {
    const c = await openRealtime(wsUrl('live-relay'), { key: keys.full });
    await c.next('transcription_session.created');
    const transcription = { model: 'client-model', language: 'de', prompt: 'Fachbegriffe' };
    c.send({ type: 'transcription_session.update', session: { input_audio_transcription: transcription } });
    expect((await c.next('transcription_session.updated')).session).toMatchObject({ input_audio_transcription: transcription });
    c.send({ type: 'transcription_session.update', event_id: 'keeps-language-2', session: { turn_detection: { type: 'server_vad', silence_duration_ms: 300 } } });
    const second = await c.next('transcription_session.updated');
    expect(second.session).toMatchObject({ input_audio_transcription: transcription, turn_detection: { silence_duration_ms: 300 } });
    const upstream = await waitForSim(sim.url, (r) => r.path === '/v1/realtime' && r.body.includes('keeps-language-2'));
    const updates = upstream.body
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as { type: string; session?: Record<string, unknown> })
      .filter((e) => e.type === 'transcription_session.update');
    // The gateway's own update on connect first (the endpoint's model), then the client's two.
    expect(updates.map((u) => u.session?.input_audio_transcription)).toEqual([{ model: 'sim-realtime' }, { model: 'sim-realtime', language: 'de', prompt: 'Fachbegriffe' }, undefined]);
    c.close();
  });

  it('tells the upstream the endpoint model once, on connect, and forwards later updates without a transcription as sent', async () => {
    const c = await openRealtime(wsUrl('live-relay'), { key: keys.full });
    await c.next('transcription_session.created');
    c.send({ type: 'transcription_session.update', event_id: 'model-once-1', session: { turn_detection: null } });
    expect((await c.next('transcription_session.updated')).session).toMatchObject({ input_audio_transcription: { model: 'model-live-relay' } });
    c.send({ type: 'transcription_session.update', event_id: 'model-once-2', session: { input_audio_transcription: null, turn_detection: null } });
    await c.next('transcription_session.updated');
    const upstream = await waitForSim(sim.url, (r) => r.path === '/v1/realtime' && r.body.includes('model-once-2'));
    const sessions = upstream.body
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as { type: string; session?: Record<string, unknown> })
      .filter((e) => e.type === 'transcription_session.update')
      .map((e) => e.session);
    expect(sessions).toEqual([{ input_audio_transcription: { model: 'sim-realtime' } }, { turn_detection: null }, { turn_detection: null }]);
    c.close();
  });

  // Regression: a client that sent no update left the upstream on its own default model, not the endpoint's.
  it('tells the upstream the endpoint model on connect, without a client update, and shows the client that model', async () => {
    const c = await openRealtime(wsUrl('live-relay'), { key: keys.full });
    const created = await c.next('transcription_session.created');
    expect(created.session).toMatchObject({ id: 'sess_sim', input_audio_transcription: { model: 'model-live-relay' } });
    c.send(appendEvent(speak('no update sent')));
    c.send({ type: 'input_audio_buffer.commit', event_id: 'no-update-commit' });
    expect((await c.next('conversation.item.input_audio_transcription.completed')).transcript).toBe('no update sent');
    // The upstream's answer to the gateway's own update is not the client's.
    expect(c.events.filter((e) => e.type === 'transcription_session.updated')).toEqual([]);
    const upstream = await waitForSim(sim.url, (r) => r.path === '/v1/realtime' && r.body.includes('no-update-commit'));
    const first = JSON.parse(upstream.body.split('\n')[0] ?? '{}') as { type: string; session?: Record<string, unknown> };
    expect(first).toMatchObject({ type: 'transcription_session.update', session: { input_audio_transcription: { model: 'sim-realtime' } } });
    c.close();
  });

  // Regression: relay forwarded a commit of under 100 ms, which segment mode refuses with an error event.
  it('refuses a commit of less than 100 ms with input_audio_buffer_commit_empty, as segment mode does, and never sends it up', async () => {
    const c = await openRealtime(wsUrl('live-relay'), { key: keys.full });
    await c.next('transcription_session.created');
    c.send({ type: 'transcription_session.update', session: { turn_detection: null } });
    await c.next('transcription_session.updated');
    c.send({ type: 'input_audio_buffer.commit', event_id: 'empty-commit' });
    expectErrorEvent(await c.next('error'), 'input_audio_buffer_commit_empty', null, 'empty-commit');
    c.send(appendEvent(speak('hi'))); // 20 ms
    c.send({ type: 'input_audio_buffer.commit', event_id: 'short-commit' });
    expectErrorEvent(await c.next('error'), 'input_audio_buffer_commit_empty', null, 'short-commit');
    c.send(appendEvent(speak(' there, long enough')));
    c.send({ type: 'input_audio_buffer.commit', event_id: 'long-commit' });
    expect((await c.next('conversation.item.input_audio_transcription.completed')).transcript).toBe('hi there, long enough');
    const upstream = await waitForSim(sim.url, (r) => r.path === '/v1/realtime' && r.body.includes('long-commit'));
    expect(upstream.body).not.toContain('empty-commit');
    expect(upstream.body).not.toContain('short-commit');
    expect(c.events.filter((e) => e.type === 'input_audio_buffer.committed')).toHaveLength(1);
    c.close();
  });

  it('relays server VAD turns from the upstream', async () => {
    const c = await openRealtime(wsUrl('live-relay'), { key: keys.full });
    await c.next('transcription_session.created');
    for (const part of chunks(Buffer.concat([speak('upstream turn'), silence(700)]))) c.send(appendEvent(part));
    await c.next('input_audio_buffer.speech_started');
    expect((await c.next('conversation.item.input_audio_transcription.completed')).transcript).toBe('upstream turn');
    c.close();
  });

  it('checks client events before the upstream sees them', async () => {
    const c = await openRealtime(wsUrl('live-relay'), { key: keys.full });
    await c.next('transcription_session.created');
    c.send({ type: 'conversation.item.create', event_id: 'x1' });
    expectErrorEvent(await c.next('error'), 'unknown_event', 'type', 'x1');
    c.close();
  });

  it('releases the upstream socket when the client disconnects abruptly', async () => {
    const raw = (await rawWebSocket(port(), path('live-relay'), { authorization: `Bearer ${keys.full}` })) as RawWs;
    raw.sendText(JSON.stringify({ type: 'transcription_session.update', session: { input_audio_transcription: { model: 'abrupt-marker' } } }));
    await waitForSim(sim.url, (r) => r.path === '/v1/realtime' && r.body.includes('"model":"sim-realtime"') && !r.completed);
    raw.socket.destroy();
    await waitForSim(sim.url, (r) => r.path === '/v1/realtime' && r.completed && r.body.includes('sim.summary'));
    await waitForSessionRow('aborted');
  });
});

describe('upgrade', () => {
  it('accepts the key as a subprotocol and answers with the realtime subprotocol', async () => {
    const c = await openRealtime(wsUrl('live'), { protocols: ['realtime', `openai-insecure-api-key.${keys.full}`] });
    expect(c.ws.protocol).toBe('realtime');
    await c.next('transcription_session.created');
    c.close();
  });

  it.each([
    ['no key', 'live', {}, 401, 'authentication_required'],
    ['an unknown key', 'live', { authorization: 'Bearer svc_test_nope' }, 401, 'invalid_api_key'],
    ['a key without the inference scope', 'live', 'management', 403, 'scope_insufficient'],
    ['an unknown endpoint', 'nope', 'full', 404, 'endpoint_not_found'],
    ['a chat endpoint', 'chat', 'full', 400, 'invalid_request'],
    ['a transcription endpoint', 'whisper', 'full', 400, 'invalid_request'],
  ] as const)('refuses the upgrade with %s', async (_, slug, who, status, code) => {
    const headers = typeof who === 'string' ? { authorization: `Bearer ${who === 'management' ? keys.managementOnly : keys.full}` } : who;
    const res = await rawWebSocket(port(), path(slug), headers);
    if (!isRefused(res)) throw new Error('the upgrade was accepted');
    expect({ status: res.status, code: (res.body as { error: { code: string } }).error.code }).toEqual({ status, code });
    expect(res.headers['x-request-id']).toMatch(/^req_/);
  });

  it('refuses a bad subprotocol key like a bad header', async () => {
    const res = await rawWebSocket(port(), path('live'), { 'sec-websocket-protocol': 'realtime, openai-insecure-api-key.svc_test_bad' });
    if (!isRefused(res)) throw new Error('the upgrade was accepted');
    expect(res.status).toBe(401);
  });

  // Regression: every HTTP route takes a trailing slash (http/route-table.ts), but on the realtime path the
  // upgrade fell through to the plain-GET route and got 426.
  it.each([
    ['/', 'transcription_session.created'],
    ['/?model=gpt-4o-transcribe', 'session.created'],
  ])('upgrades with a trailing slash on the path (%s), as every route takes one', async (tail, created) => {
    const c = await openRealtime(`${wsUrl('live')}${tail}`, { key: keys.full });
    await c.next(created);
    c.close();
  });

  it('answers a plain GET with 426 upgrade_required', async () => {
    const res = await fetch(`${gw.url}${path('live')}`, { headers: { authorization: `Bearer ${keys.full}` } });
    expect(res.status).toBe(426);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('upgrade_required');
  });
});

describe('the operator\'s view of a session', () => {
  it('logs one line when a session ends: duration, audio seconds, close code and reason, outcome', async () => {
    const c = await manualSession();
    // One second of 24 kHz PCM16.
    for (const chunk of chunks(silence(1000))) c.send(appendEvent(chunk));
    c.close(1000, 'done here');
    let line: Record<string, unknown> | undefined;
    for (let i = 0; i < 100 && !line; i++) {
      await new Promise((r) => setTimeout(r, 50));
      line = gw.stdout
        .join('')
        .split('\n')
        .filter((l) => l.includes('"realtime session ended"'))
        .map((l) => JSON.parse(l) as Record<string, unknown>)
        .find((l) => l.close_reason === 'done here');
    }
    expect(line).toMatchObject({ project: PROJECT, endpoint: 'live', close_code: 1000, outcome: 'completed', audio_seconds: 1 });
    expect(line?.duration_ms).toEqual(expect.any(Number));
  });
});

describe('errors a session can end or continue with', () => {
  it('ends a relay session with an upstream_error event and 1011 when the model server drops it', async () => {
    const c = await openRealtime(wsUrl('live-drop'), { key: keys.full });
    const e = await c.next('error');
    expectErrorEvent(e, 'upstream_error', null);
    expect((await c.closed()).code).toBe(1011);
  });

  // Regression: SPEC "Errors" puts retry_after and retry_strategy inside every 429 error; the socket's had neither.
  it('refuses a segment past the key quota with transcription.failed carrying the HTTP 429\'s retry_after and retry_strategy', async () => {
    const c = await twoSegments('live', segmentQuotaKey);
    expect((await c.next('conversation.item.input_audio_transcription.completed')).transcript).toBe('within quota');
    const error = (await c.next('conversation.item.input_audio_transcription.failed')).error as Record<string, unknown>;
    expectRetryHints(error, await http429(segmentQuotaKey));
    c.close();
  });

  it('ends a relay session whose segment is refused with an error event carrying the HTTP 429\'s retry_after and retry_strategy', async () => {
    const c = await twoSegments('live-relay', relayQuotaKey);
    const error = (await c.next('error')).error as Record<string, unknown>;
    expectRetryHints(error, await http429(relayQuotaKey));
    expect((await c.closed()).code).toBe(1008);
  });

  it('refuses an append past the buffer cap with input_audio_buffer_full, param audio, and keeps the session', async () => {
    const c = await openRealtime(wsUrl('live-small'), { key: keys.full });
    await c.next('transcription_session.created');
    c.send({ type: 'transcription_session.update', session: { turn_detection: null } });
    await c.next('transcription_session.updated');
    c.send({ ...appendEvent(silence(150)), event_id: 'evt_big' });
    expectErrorEvent(await c.next('error'), 'input_audio_buffer_full', 'audio', 'evt_big');
    c.send({ type: 'input_audio_buffer.clear' });
    await c.next('input_audio_buffer.cleared');
    c.close();
  });

  it('ends a session that floods client events, past 1000 in one second of the gateway clock, with 1008', async () => {
    // 200,000 one-byte frames on one socket held the event loop 5 s, every tenant's HTTP with it.
    await advanceClock(gw.url, 0, true);
    try {
      const c = await openRealtime(wsUrl('live'), { key: keys.full });
      await c.next('transcription_session.created');
      for (let i = 0; i < 1500; i++) c.send({ type: 'input_audio_buffer.clear' });
      const error = (await c.next('error')).error as Record<string, unknown>;
      expect(error).toMatchObject({ code: 'rate_limit_exceeded' });
      expect(String(error.message)).toMatch(/More than 1000 client events in one second/);
      expect((await c.closed()).code).toBe(1008);
    } finally {
      await advanceClock(gw.url, 0, false);
    }
  });
});
