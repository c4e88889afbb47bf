/**
 * The realtime socket speaks both dialects of the transcription protocol (docs/realtime.md, "Dialects"):
 * the beta (`transcription_session.update`) and GA (`session.update` with a transcription session), which
 * today's official clients send. Regression: a GA `session.update` was answered with `unknown_event`, so
 * the openai SDK's realtime client could not configure a session. Hand-written frames here, to pin the
 * shapes; test/sdk/realtime.test.ts drives the same through the SDK's own client.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silence, speak } from '../../src/simulator/speech-codec.js';
import { audioTestConfig } from '../helpers/audio-config.js';
import { makeKeys, PROJECT, type TestKeys } from '../helpers/configs.js';
import { startGatewayProcess, startSimulatorProcess, type GatewayProcess, type SimulatorProcess } from '../helpers/processes.js';
import { appendEvent, chunks, openRealtime, type RealtimeClient, type ServerEvent } from '../helpers/realtime-client.js';
import { waitForSim } from '../helpers/simulator-log.js';

let sim: SimulatorProcess;
let gw: GatewayProcess;
let keys: TestKeys;

beforeAll(async () => {
  keys = makeKeys();
  sim = await startSimulatorProcess();
  gw = await startGatewayProcess(audioTestConfig(sim.url, keys));
});

afterAll(async () => {
  await gw?.stop();
  await sim?.stop();
});

/** `?model=` is how the GA SDKs connect; the gateway reads it as the GA marker. */
const wsUrl = (slug: string, query = ''): string => `${gw.url.replace(/^http/, 'ws')}/${PROJECT}/${slug}/v1/realtime${query}`;
const GA = '?model=gpt-4o-transcribe';

const gaUpdate = (input: Record<string, unknown>, extra: Record<string, unknown> = {}): Record<string, unknown> => ({
  type: 'session.update',
  session: { type: 'transcription', audio: { input }, ...extra },
});

function expectErrorEvent(e: ServerEvent, code: string, param: string | null, eventId: string | null = null): void {
  const error = e.error as Record<string, unknown>;
  expect({ code: error.code, param: error.param, event_id: error.event_id }).toEqual({ code, param, event_id: eventId });
  expect(String(error.message).length).toBeGreaterThan(0);
}

async function transcribe(c: RealtimeClient, words: string): Promise<ServerEvent> {
  c.send(appendEvent(speak(words)));
  c.send({ type: 'input_audio_buffer.commit' });
  const committed = await c.next('input_audio_buffer.committed');
  const done = await c.next('conversation.item.input_audio_transcription.completed');
  expect(done.item_id).toBe(committed.item_id);
  return done;
}

describe('GA dialect, segment mode', () => {
  it('greets a ?model= client with a GA session.created, applies session.update and transcribes', async () => {
    const c = await openRealtime(wsUrl('live', GA), { key: keys.full });
    const created = await c.next('session.created');
    expect(created.session).toEqual({
      id: expect.stringMatching(/^sess_/),
      object: 'realtime.transcription_session',
      type: 'transcription',
      audio: {
        input: {
          format: { type: 'audio/pcm', rate: 24000 },
          transcription: { model: 'model-live', language: null, prompt: '' },
          turn_detection: { type: 'server_vad', threshold: 0.5, prefix_padding_ms: 100, silence_duration_ms: 200 },
          noise_reduction: null,
        },
      },
      include: null,
    });
    c.send(
      gaUpdate(
        { format: { type: 'audio/pcm', rate: 24000 }, transcription: { model: 'gpt-4o-transcribe', language: 'en', prompt: 'ga-segment-marker' }, turn_detection: null, noise_reduction: { type: 'near_field' } },
        { include: ['item.input_audio_transcription.logprobs'] },
      ),
    );
    const updated = await c.next('session.updated');
    expect(updated.session).toMatchObject({ type: 'transcription', audio: { input: { transcription: { model: 'gpt-4o-transcribe', language: 'en', prompt: 'ga-segment-marker' }, turn_detection: null } } });
    const done = await transcribe(c, 'hello in ga');
    expect(done).toMatchObject({ transcript: 'hello in ga', content_index: 0, usage: { type: 'tokens' } });
    expect(c.events.find((e) => e.type === 'conversation.item.input_audio_transcription.delta')).toMatchObject({ item_id: done.item_id, delta: 'hello in ga' });
    const upstream = await waitForSim(sim.url, (r) => r.path === '/v1/audio/transcriptions' && r.body.includes('ga-segment-marker'));
    expect(JSON.parse(upstream.body)).toMatchObject({ fields: { model: 'sim-whisper', language: 'en', prompt: 'ga-segment-marker' } });
    expect(c.events.some((e) => e.type.startsWith('transcription_session.'))).toBe(false);
    c.close();
  });

  it('maps GA server VAD settings onto the gateway VAD (prefix padding 0: the turn starts where speech does)', async () => {
    const c = await openRealtime(wsUrl('live', GA), { key: keys.full });
    await c.next('session.created');
    c.send(gaUpdate({ turn_detection: { type: 'server_vad', prefix_padding_ms: 0, silence_duration_ms: 200, create_response: false, interrupt_response: false } }));
    expect((await c.next('session.updated')).session).toMatchObject({ audio: { input: { turn_detection: { type: 'server_vad', prefix_padding_ms: 0, silence_duration_ms: 200 } } } });
    for (const part of chunks(Buffer.concat([silence(100), speak('spoken turn'), silence(400)]))) c.send(appendEvent(part));
    expect((await c.next('input_audio_buffer.speech_started')).audio_start_ms).toBe(100);
    expect((await c.next('conversation.item.input_audio_transcription.completed')).transcript).toBe('spoken turn');
    c.close();
  });

  it('names the GA path of every field outside its rules, and keeps the session', async () => {
    const c = await openRealtime(wsUrl('live', GA), { key: keys.full });
    await c.next('session.created');
    const cases: [Record<string, unknown>, string, string | null][] = [
      [{ type: 'session.update', session: { audio: { input: { turn_detection: null } } } }, 'invalid_request', 'session.type'],
      [{ type: 'session.update', session: { type: 'realtime', instructions: 'talk' } }, 'invalid_request', 'session.type'],
      [gaUpdate({ format: { type: 'audio/pcmu' } }), 'invalid_request', 'session.audio.input.format.type'],
      [gaUpdate({ format: { type: 'audio/pcm', rate: 16000 } }), 'invalid_request', 'session.audio.input.format.rate'],
      [gaUpdate({ turn_detection: { type: 'semantic_vad' } }), 'invalid_request', 'session.audio.input.turn_detection.type'],
      [gaUpdate({ turn_detection: { type: 'server_vad', silence_duration_ms: 5 } }), 'invalid_request', 'session.audio.input.turn_detection.silence_duration_ms'],
      [gaUpdate({ transcription: { model: '' } }), 'invalid_request', 'session.audio.input.transcription.model'],
      [gaUpdate({ transcription: { language: 'english!!' } }), 'invalid_request', 'session.audio.input.transcription.language'],
      [{ type: 'response.create' }, 'unknown_event', 'type'],
    ];
    for (const [event, code, param] of cases) {
      c.send({ ...event, event_id: `bad_${param}` });
      expectErrorEvent(await c.next('error'), code, param, `bad_${param}`);
    }
    c.send(gaUpdate({ turn_detection: null }));
    await c.next('session.updated');
    expect((await transcribe(c, 'still fine')).transcript).toBe('still fine');
    c.close();
  });
});

describe('which dialect a session speaks', () => {
  it('keeps the beta for a client that sends OpenAI-Beta: realtime=v1, even with ?model=', async () => {
    const c = await openRealtime(wsUrl('live', GA), { key: keys.full, headers: { 'openai-beta': 'realtime=v1' } });
    await c.next('transcription_session.created');
    c.send({ ...gaUpdate({ turn_detection: null }), event_id: 'ga_in_beta' });
    expectErrorEvent(await c.next('error'), 'invalid_request', 'type', 'ga_in_beta');
    c.send({ type: 'transcription_session.update', session: { turn_detection: null } });
    expect((await c.next('transcription_session.updated')).session).toMatchObject({ input_audio_format: 'pcm16', turn_detection: null });
    c.close();
  });

  it('takes the openai-beta.realtime-v1 subprotocol (browsers) as the beta marker', async () => {
    const c = await openRealtime(wsUrl('live', GA), { protocols: ['realtime', `openai-insecure-api-key.${keys.full}`, 'openai-beta.realtime-v1'] });
    expect(c.ws.protocol).toBe('realtime');
    await c.next('transcription_session.created');
    c.close();
  });

  it.each([
    ['session.update', 'transcription_session.update', gaUpdate({ turn_detection: null }), 'session.updated'],
    ['transcription_session.update', 'session.update', { type: 'transcription_session.update', session: { turn_detection: null } }, 'transcription_session.updated'],
  ] as const)('lets the first update decide on a bare URL: %s, after which %s is refused', async (_first, _second, update, reply) => {
    const c = await openRealtime(wsUrl('live'), { key: keys.full });
    await c.next('transcription_session.created');
    c.send(update);
    await c.next(reply);
    const other = update.type === 'session.update' ? { type: 'transcription_session.update', session: {} } : gaUpdate({});
    c.send({ ...other, event_id: 'other_dialect' });
    expectErrorEvent(await c.next('error'), 'invalid_request', 'type', 'other_dialect');
    expect((await transcribe(c, 'either way')).transcript).toBe('either way');
    c.close();
  });
});

describe('GA dialect, relay mode (the upstream speaks the beta)', () => {
  it('translates the GA session for the upstream and the upstream session back to GA', async () => {
    const c = await openRealtime(wsUrl('live-relay', GA), { key: keys.full });
    const created = await c.next('session.created');
    expect(created.session).toMatchObject({ id: 'sess_sim', type: 'transcription', audio: { input: { format: { type: 'audio/pcm', rate: 24000 } } } });
    c.send(gaUpdate({ transcription: { model: 'client-model', prompt: 'ga-relay-marker' }, turn_detection: null }));
    const updated = await c.next('session.updated');
    expect(updated.session).toMatchObject({ id: 'sess_sim', type: 'transcription', audio: { input: { transcription: { model: 'client-model', prompt: 'ga-relay-marker' }, turn_detection: null } } });
    expect((await transcribe(c, 'relayed in ga')).transcript).toBe('relayed in ga');
    const deltas = c.events.filter((e) => e.type === 'conversation.item.input_audio_transcription.delta').map((e) => e.delta);
    expect(deltas).toEqual(['relayed', ' in', ' ga']);
    const upstream = await waitForSim(sim.url, (r) => r.path === '/v1/realtime' && r.body.includes('ga-relay-marker'));
    const sent = upstream.body
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    // sent[0] is the gateway's own update on connect (the endpoint's model); then the client's, in the beta.
    expect(sent[1]).toEqual({ type: 'transcription_session.update', session: { input_audio_transcription: { model: 'sim-realtime', prompt: 'ga-relay-marker' }, turn_detection: null } });
    expect(c.events.some((e) => e.type.startsWith('transcription_session.'))).toBe(false);
    c.close();
  });
});
