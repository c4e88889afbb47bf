/**
 * The official `openai` SDK's realtime client (`OpenAIRealtimeWS`, GA protocol) against a real gateway
 * serving TLS, in both realtime modes. Issue 21: that client always dials wss:// and configures a session
 * with the GA `session.update`, which the gateway used to answer with `unknown_event`. The certificate is
 * self-signed, made by openssl as docs/realtime.md shows; the last test runs that page's worked example
 * with NODE_EXTRA_CA_CERTS, as printed except for the URL and key.
 */
import { execFileSync, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import OpenAI from 'openai';
import { OpenAIRealtimeWS } from 'openai/realtime/ws';
import type { RealtimeServerEvent, SessionUpdateEvent } from 'openai/resources/realtime/realtime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silence, speak } from '../../src/simulator/speech-codec.js';
import { audioTestConfig } from '../helpers/audio-config.js';
import { makeKeys, PROJECT, type TestKeys } from '../helpers/configs.js';
import { startGatewayProcess, startSimulatorProcess, tempDir, type GatewayProcess, type SimulatorProcess } from '../helpers/processes.js';
import { chunks } from '../helpers/realtime-client.js';

let sim: SimulatorProcess;
let gw: GatewayProcess;
let keys: TestKeys;
let certFile: string;
let ca: string;

beforeAll(async () => {
  keys = makeKeys();
  const dir = tempDir();
  certFile = join(dir, 'cert.pem');
  const keyFile = join(dir, 'key.pem');
  // The command docs/realtime.md prints (the subjectAltName is what Node checks 127.0.0.1 against).
  execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', keyFile, '-out', certFile, '-days', '365', '-subj', '/CN=localhost', '-addext', 'subjectAltName=IP:127.0.0.1,DNS:localhost'], { stdio: 'ignore' });
  ca = readFileSync(certFile, 'utf8');
  sim = await startSimulatorProcess();
  gw = await startGatewayProcess(audioTestConfig(sim.url, keys, { server: { tls: { cert_file: certFile, key_file: keyFile } } }));
});

afterAll(async () => {
  await gw?.stop();
  await sim?.stop();
});

type Ev<T extends RealtimeServerEvent['type']> = Extract<RealtimeServerEvent, { type: T }>;

/** The SDK's client on an endpoint, with every server event collected and awaitable by type. */
async function sdkSession(slug: string) {
  const client = new OpenAI({ baseURL: `${gw.url}/${PROJECT}/${slug}/v1`, apiKey: keys.full, maxRetries: 0 });
  const rt = new OpenAIRealtimeWS({ model: 'gpt-4o-transcribe', options: { ca } }, client);
  const events: RealtimeServerEvent[] = [];
  const errors: string[] = [];
  let wake = (): void => undefined;
  rt.on('event', (e) => {
    events.push(e);
    wake();
  });
  rt.on('error', (err) => {
    errors.push(err.message);
    wake();
  });
  const taken = new Set<RealtimeServerEvent>();
  async function next<T extends RealtimeServerEvent['type']>(type: T, timeoutMs = 5000): Promise<Ev<T>> {
    const until = Date.now() + timeoutMs;
    for (;;) {
      const found = events.find((e): e is Ev<T> => e.type === type && !taken.has(e));
      if (found) {
        taken.add(found);
        return found;
      }
      if (errors.length > 0) throw new Error(`error before ${type}: ${errors.join('; ')}`);
      const left = until - Date.now();
      if (left <= 0) throw new Error(`no ${type} within ${timeoutMs} ms; got ${events.map((e) => e.type).join(', ')}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
  }
  const append = (pcm: Buffer): void => rt.send({ type: 'input_audio_buffer.append', audio: pcm.toString('base64') });
  return { rt, events, errors, next, append };
}

const manualUpdate: SessionUpdateEvent = {
  type: 'session.update',
  session: {
    type: 'transcription',
    audio: { input: { format: { type: 'audio/pcm', rate: 24000 }, transcription: { model: 'gpt-4o-transcribe', language: 'en' }, turn_detection: null } },
  },
};

describe('OpenAIRealtimeWS over wss://', () => {
  it.each([
    ['segment', 'live', ['hello from the sdk']],
    ['relay', 'live-relay', ['hello', ' from', ' the', ' sdk']],
  ])('transcribes a committed buffer in %s mode with GA session events', async (_mode, slug, deltas) => {
    const s = await sdkSession(slug);
    expect(s.rt.url.href).toBe(`${gw.url.replace(/^https/, 'wss')}/${PROJECT}/${slug}/v1/realtime?model=gpt-4o-transcribe`);
    const created = await s.next('session.created');
    expect(created.session.type).toBe('transcription');
    s.rt.send(manualUpdate);
    const updated = await s.next('session.updated');
    expect(updated.session).toMatchObject({ type: 'transcription', audio: { input: { format: { type: 'audio/pcm', rate: 24000 }, transcription: { model: 'gpt-4o-transcribe', language: 'en' }, turn_detection: null } } });
    for (const part of chunks(speak('hello from the sdk'))) s.append(part);
    s.rt.send({ type: 'input_audio_buffer.commit' });
    const committed = await s.next('input_audio_buffer.committed');
    const done = await s.next('conversation.item.input_audio_transcription.completed');
    expect(done).toMatchObject({ item_id: committed.item_id, content_index: 0, transcript: 'hello from the sdk', usage: { type: 'tokens' } });
    const got = s.events.filter((e): e is Ev<'conversation.item.input_audio_transcription.delta'> => e.type === 'conversation.item.input_audio_transcription.delta');
    expect(got.map((e) => e.delta)).toEqual(deltas);
    expect(s.errors).toEqual([]);
    s.rt.close();
  });

  it('cuts turns with server VAD configured through session.update', async () => {
    const s = await sdkSession('live');
    await s.next('session.created');
    s.rt.send({ type: 'session.update', session: { type: 'transcription', audio: { input: { turn_detection: { type: 'server_vad', silence_duration_ms: 200, prefix_padding_ms: 100 } } } } });
    await s.next('session.updated');
    for (const part of chunks(Buffer.concat([silence(100), speak('first turn'), silence(400), speak('second turn'), silence(400)]))) s.append(part);
    const started = await s.next('input_audio_buffer.speech_started');
    const stopped = await s.next('input_audio_buffer.speech_stopped');
    expect(stopped.item_id).toBe(started.item_id);
    expect((await s.next('conversation.item.input_audio_transcription.completed')).transcript).toBe('first turn');
    expect((await s.next('conversation.item.input_audio_transcription.completed')).transcript).toBe('second turn');
    s.rt.close();
  });

  it("surfaces the gateway's error events through the SDK's error handler", async () => {
    const s = await sdkSession('live');
    await s.next('session.created');
    s.rt.send({ type: 'input_audio_buffer.commit', event_id: 'too_early' });
    const error = await s.next('error');
    expect(error.error).toMatchObject({ type: 'invalid_request_error', code: 'input_audio_buffer_commit_empty', param: null, event_id: 'too_early' });
    expect(s.errors).toEqual([expect.stringMatching(/code=input_audio_buffer_commit_empty .*event_id=too_early$/)]);
    s.rt.close();
  });
});

describe('docs/realtime.md worked example', () => {
  it('runs as printed with NODE_EXTRA_CA_CERTS trusting the self-signed certificate', async () => {
    const doc = readFileSync('docs/realtime.md', 'utf8');
    const block = doc.split('<!-- test/sdk/realtime.test.ts runs this block')[1]?.match(/```js\n([\s\S]*?)```/)?.[1];
    if (!block) throw new Error('the worked example is missing from docs/realtime.md');
    const demoUrl = 'https://127.0.0.1:8080/proj_demo/live/v1';
    const demoKey = /apiKey: '([^']+)'/.exec(block)?.[1] ?? '';
    expect(block).toContain(demoUrl);
    const code = block.replace(demoUrl, `${gw.url}/${PROJECT}/live/v1`).replace(demoKey, keys.full);
    // -e resolves imports from the working directory, as the file saved in the checkout does.
    const child = spawn(process.execPath, ['--input-type=module', '-e', code], { env: { ...process.env, NODE_EXTRA_CA_CERTS: certFile }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    const exit = await new Promise<number | null>((resolve) => child.on('close', resolve));
    expect({ exit, out: out.trim() }).toEqual({ exit: 0, out: 'transcript: hello over tls' });
  });
});
