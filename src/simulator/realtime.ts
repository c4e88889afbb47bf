// The simulator's realtime transcription WebSocket (/v1/realtime): the subset the gateway relays in
// relay mode, answered deterministically. Audio is PCM16 at 24 kHz; transcripts come from the speech
// code; server VAD is the gateway's own energy VAD at a fixed threshold of 0.02 of full scale.
import uWS from 'uWebSockets.js';
import type { HttpRequest, HttpResponse, TemplatedApp, WebSocket, us_socket_context_t } from 'uWebSockets.js';
import { EnergyVad } from '../core/realtime/vad.js';
import { isRecord } from './json.js';
import type { RequestLogEntry } from './request-log.js';
import { decodeSpeech, hashedTranscript } from './speech-codec.js';
import { transcriptUsage } from './audio.js';

const RATE = 24_000;
const VAD_THRESHOLD = 0.02;

interface State {
  entry: RequestLogEntry;
  protocol: string;
  chunks: Buffer[];
  /** Absolute sample offset of chunks[0]. */
  bufferStart: number;
  position: number;
  speechStart: number;
  vad: EnergyVad | null;
  session: Record<string, unknown>;
  items: number;
  lastItem: string | null;
  appended: number;
  events: number;
  /** The `sim_close` query knob: end the socket with this code right after `created` (a failing upstream). */
  closeWith: number;
}

const DEFAULT_TURN_DETECTION = { type: 'server_vad', threshold: 0.5, prefix_padding_ms: 300, silence_duration_ms: 500 };

export function registerRealtime(app: TemplatedApp, open: (headers: Record<string, string>) => RequestLogEntry): void {
  app.ws<State>('/v1/realtime', {
    compression: uWS.DISABLED,
    maxPayloadLength: 32 * 1024 * 1024,
    maxBackpressure: 64 * 1024 * 1024,
    idleTimeout: 120,
    upgrade: (res: HttpResponse, req: HttpRequest, context: us_socket_context_t) => {
      const headers: Record<string, string> = {};
      req.forEach((k, v) => (headers[k] = v));
      const entry = open(headers);
      entry.status = 101;
      const protocol = (headers['sec-websocket-protocol'] ?? '').split(',')[0]?.trim() ?? '';
      const closeWith = Number(req.getQuery('sim_close') ?? '');
      const session = { id: 'sess_sim', object: 'realtime.transcription_session', input_audio_format: 'pcm16', input_audio_transcription: null, turn_detection: DEFAULT_TURN_DETECTION };
      const state: State = { entry, protocol, chunks: [], bufferStart: 0, position: 0, speechStart: 0, vad: null, session, items: 0, lastItem: null, appended: 0, events: 0, closeWith: Number.isInteger(closeWith) && closeWith >= 1000 ? closeWith : 0 };
      state.vad = vadFor(state);
      res.upgrade(state, headers['sec-websocket-key'] ?? '', protocol, headers['sec-websocket-extensions'] ?? '', context);
    },
    open: (ws) => {
      send(ws, { type: 'transcription_session.created', session: ws.getUserData().session });
      const code = ws.getUserData().closeWith;
      if (code) ws.end(code, 'sim_close');
    },
    message: (ws, message) => handle(ws, Buffer.from(message).toString('utf8')),
    close: (ws) => {
      const s = ws.getUserData();
      s.entry.body += `${JSON.stringify({ type: 'sim.summary', appended_bytes: s.appended })}\n`;
      s.entry.completed = true;
    },
  });
}

function send(ws: WebSocket<State>, event: Record<string, unknown>): void {
  const s = ws.getUserData();
  ws.send(JSON.stringify({ event_id: `event_sim_${++s.events}`, ...event }));
}

function vadFor(s: State): EnergyVad | null {
  const td = s.session['turn_detection'];
  if (!isRecord(td)) return null;
  const silence = typeof td['silence_duration_ms'] === 'number' ? td['silence_duration_ms'] : 500;
  return new EnergyVad({ threshold: VAD_THRESHOLD, silenceMs: silence }, RATE);
}

function handle(ws: WebSocket<State>, text: string): void {
  const s = ws.getUserData();
  let event: unknown;
  try {
    event = JSON.parse(text);
  } catch {
    send(ws, { type: 'error', error: { type: 'invalid_request_error', code: 'invalid_json', message: 'not JSON', param: null, event_id: null } });
    return;
  }
  const type = isRecord(event) ? event['type'] : undefined;
  if (type !== 'input_audio_buffer.append') s.entry.body += `${text}\n`;
  if (!isRecord(event)) return;
  if (type === 'transcription_session.update' && isRecord(event['session'])) {
    s.session = { ...s.session, ...event['session'] };
    s.vad = vadFor(s);
    send(ws, { type: 'transcription_session.updated', session: s.session });
  } else if (type === 'input_audio_buffer.append' && typeof event['audio'] === 'string') {
    const pcm = Buffer.from(event['audio'], 'base64');
    s.appended += pcm.length;
    s.chunks.push(pcm);
    s.position += pcm.length / 2;
    for (const e of s.vad?.push(pcm) ?? []) {
      if (e.kind === 'speech_started') {
        s.speechStart = e.sample;
        send(ws, { type: 'input_audio_buffer.speech_started', audio_start_ms: Math.round((e.sample / RATE) * 1000), item_id: `item_sim_${s.items + 1}` });
      } else {
        send(ws, { type: 'input_audio_buffer.speech_stopped', audio_end_ms: Math.round((e.sample / RATE) * 1000), item_id: `item_sim_${s.items + 1}` });
        commit(ws);
      }
    }
  } else if (type === 'input_audio_buffer.commit') {
    commit(ws);
  } else if (type === 'input_audio_buffer.clear') {
    s.chunks = [];
    s.bufferStart = s.position;
    send(ws, { type: 'input_audio_buffer.cleared' });
  } else {
    send(ws, { type: 'error', error: { type: 'invalid_request_error', code: 'unknown_event', message: `unknown event ${String(type)}`, param: 'type', event_id: null } });
  }
}

/** Commits everything buffered (a VAD cut also takes the chunk being processed). */
function commit(ws: WebSocket<State>): void {
  const s = ws.getUserData();
  const pcm = Buffer.concat(s.chunks);
  s.chunks = [];
  s.bufferStart = s.position;
  const item = `item_sim_${++s.items}`;
  send(ws, { type: 'input_audio_buffer.committed', previous_item_id: s.lastItem, item_id: item });
  s.lastItem = item;
  const transcript = decodeSpeech(pcm) ?? hashedTranscript(pcm);
  for (const word of transcript.split(/(?= )/).filter(Boolean)) {
    send(ws, { type: 'conversation.item.input_audio_transcription.delta', item_id: item, content_index: 0, delta: word });
  }
  const usage = transcriptUsage({ text: transcript, durationMs: Math.round((pcm.length / 2 / RATE) * 1000) });
  send(ws, { type: 'conversation.item.input_audio_transcription.completed', item_id: item, content_index: 0, transcript, usage });
}
