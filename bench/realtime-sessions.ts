/**
 * The client side of the realtime bench: N transcription sessions streaming PCM16 in real time over
 * undici WebSockets, each committing a fixed-length segment on a fixed period, and timing every commit to
 * its `...transcription.completed`. Each segment speaks a short phrase in the simulator's speech code
 * (src/simulator/speech-codec.ts) followed by silence, so every transcript is checked exactly.
 * Sessions start staggered across one segment period, so commits arrive evenly rather than in bursts.
 */
import { request, WebSocket } from 'undici';
import { multipartBody } from '../src/core/audio/multipart.js';
import { pcm16ToWav } from '../src/core/audio/wav.js';
import { speak } from '../src/simulator/speech-codec.js';

export const RATE = 24_000;
const BYTES_PER_MS = (RATE * 2) / 1000;

export interface Shape {
  readonly sessions: number;
  /** Audio per append. */
  readonly chunkMs: number;
  /** Audio per committed segment. */
  readonly segmentMs: number;
}

/** `phrase` spoken at the start of `segmentMs` of audio, the rest silence; `speechBytes` long of sound. */
export function segmentPcm(phrase: string, segmentMs: number): { pcm: Buffer; speechBytes: number } {
  const pcm = Buffer.alloc(segmentMs * BYTES_PER_MS);
  const speech = speak(phrase, { sampleRate: RATE });
  speech.copy(pcm);
  return { pcm, speechBytes: speech.length };
}

const phraseOf = (session: number, segment: number): string => `s${session}n${segment}`;

export interface SessionStats {
  connected: number;
  connectFailures: number;
  commits: number;
  completed: number;
  wrongTranscripts: number;
  failed: number;
  errorEvents: number;
  closedEarly: number;
  /** Seconds of audio sent, over all sessions. */
  audioSeconds: number;
  /** Seconds of audio the sessions' clocks said were due by the end: sent / due is the real-time factor. */
  dueAudioSeconds: number;
  readonly latenciesMs: number[];
}

interface Session {
  readonly index: number;
  readonly ws: WebSocket;
  /** When this session's audio clock starts (performance.now()). */
  readonly start: number;
  sentChunks: number;
  /** Commit times and expected transcripts, in commit order (transcripts come back in that order). */
  readonly pending: { at: number; phrase: string }[];
  current: { pcm: Buffer; speechBytes: number };
}

function open(url: string, key: string): Promise<WebSocket> {
  const ws = new WebSocket(url, { headers: { authorization: `Bearer ${key}` } });
  return new Promise((resolve, reject) => {
    ws.addEventListener('open', () => resolve(ws));
    ws.addEventListener('error', () => reject(new Error('handshake failed')));
  });
}

/** Opens every session (staggered start times), streams `seconds` past the stagger, then closes them all. */
export interface SteadyHooks {
  /** Every session is streaming. */
  begin(): void;
  /** The last chunk is due; what follows is waiting for the last transcripts. */
  end(): void;
}

export async function driveSessions(url: string, key: string, shape: Shape, seconds: number, hooks?: SteadyHooks): Promise<SessionStats> {
  const stats: SessionStats = { connected: 0, connectFailures: 0, commits: 0, completed: 0, wrongTranscripts: 0, failed: 0, errorEvents: 0, closedEarly: 0, audioSeconds: 0, dueAudioSeconds: 0, latenciesMs: [] };
  const update = JSON.stringify({ type: 'transcription_session.update', session: { input_audio_format: 'pcm16', turn_detection: { type: 'server_vad', silence_duration_ms: 5000 } } });
  const silentAppend = `{"type":"input_audio_buffer.append","audio":"${Buffer.alloc(shape.chunkMs * BYTES_PER_MS).toString('base64')}"}`;
  const chunkBytes = shape.chunkMs * BYTES_PER_MS;
  const chunksPerSegment = shape.segmentMs / shape.chunkMs;
  const opened = await Promise.allSettled(Array.from({ length: shape.sessions }, () => open(url, key)));
  const t0 = performance.now() + 200;
  const sessions: Session[] = [];
  let closing = false;
  opened.forEach((r, index) => {
    if (r.status === 'rejected') return void (stats.connectFailures += 1);
    stats.connected += 1;
    const ws = r.value;
    const s: Session = { index, ws, start: t0 + (index * shape.segmentMs) / shape.sessions, sentChunks: 0, pending: [], current: segmentPcm(phraseOf(index, 0), shape.segmentMs) };
    ws.send(update);
    ws.addEventListener('message', (e) => onEvent(s, JSON.parse(String(e.data)) as { type: string; transcript?: string }));
    ws.addEventListener('close', () => {
      if (!closing) stats.closedEarly += 1;
    });
    sessions.push(s);
  });
  const onEvent = (s: Session, event: { type: string; transcript?: string }): void => {
    if (event.type === 'error') stats.errorEvents += 1;
    else if (event.type === 'conversation.item.input_audio_transcription.completed') {
      const p = s.pending.shift();
      if (!p) return;
      stats.completed += 1;
      stats.latenciesMs.push(performance.now() - p.at);
      if (event.transcript !== p.phrase) stats.wrongTranscripts += 1;
    } else if (event.type === 'conversation.item.input_audio_transcription.failed') {
      s.pending.shift();
      stats.failed += 1;
    }
  };
  const end = t0 + shape.segmentMs + seconds * 1000;
  // One ticker for all sessions; each sends whatever its own audio clock says is due, so timer jitter
  // delays chunks a little but never loses real time.
  const tick = (): void => {
    const now = performance.now();
    for (const s of sessions) {
      const due = Math.floor((Math.min(now, end) - s.start) / shape.chunkMs);
      while (s.sentChunks < due) {
        const k = s.sentChunks % chunksPerSegment;
        const from = k * chunkBytes;
        // Silence is the same every time: only chunks with sound are encoded.
        const sound = from < s.current.speechBytes;
        s.ws.send(sound ? `{"type":"input_audio_buffer.append","audio":"${s.current.pcm.subarray(from, from + chunkBytes).toString('base64')}"}` : silentAppend);
        s.sentChunks += 1;
        stats.audioSeconds += shape.chunkMs / 1000;
        if (k === chunksPerSegment - 1) {
          const segment = s.sentChunks / chunksPerSegment;
          s.ws.send('{"type":"input_audio_buffer.commit"}');
          s.pending.push({ at: performance.now(), phrase: phraseOf(s.index, segment - 1) });
          stats.commits += 1;
          s.current = segmentPcm(phraseOf(s.index, segment), shape.segmentMs);
        }
      }
    }
  };
  const timer = setInterval(tick, Math.max(5, shape.chunkMs / 4));
  await new Promise((r) => setTimeout(r, t0 + shape.segmentMs - performance.now()));
  hooks?.begin();
  await new Promise((r) => setTimeout(r, end - performance.now()));
  clearInterval(timer);
  tick();
  for (const s of sessions) stats.dueAudioSeconds += Math.max(0, Math.floor((end - s.start) / shape.chunkMs) * shape.chunkMs) / 1000;
  hooks?.end();
  // Let the last commits come back before closing.
  const drainUntil = performance.now() + 5000;
  while (sessions.some((s) => s.pending.length > 0) && performance.now() < drainUntil) await new Promise((r) => setTimeout(r, 20));
  closing = true;
  for (const s of sessions) s.ws.close();
  return stats;
}

/** The same segments posted straight to the simulator's transcription route, `perSecond` a second. */
export function probeDirect(simUrl: string, segmentMs: number, perSecond: number): { stop(): Promise<{ latenciesMs: number[]; wrong: number; failed: number }> } {
  const latenciesMs: number[] = [];
  let wrong = 0;
  let failed = 0;
  let n = 0;
  const inflight = new Set<Promise<void>>();
  const once = async (): Promise<void> => {
    const phrase = phraseOf(9999, n++);
    const upload = multipartBody(`bench-${n}`, [['model', 'sim-whisper'], ['response_format', 'json']], { name: 'file', filename: 'segment.wav', contentType: 'audio/wav', data: pcm16ToWav(segmentPcm(phrase, segmentMs).pcm, RATE) });
    const started = performance.now();
    try {
      const res = await request(`${simUrl}/audio/transcriptions`, { method: 'POST', body: upload.body, headers: { 'content-type': upload.contentType } });
      const body = (await res.body.json()) as { text?: string };
      latenciesMs.push(performance.now() - started);
      if (res.statusCode !== 200) failed += 1;
      else if (body.text !== phrase) wrong += 1;
    } catch {
      failed += 1;
    }
  };
  const timer = setInterval(() => {
    const p = once().finally(() => inflight.delete(p));
    inflight.add(p);
  }, 1000 / perSecond);
  return {
    async stop() {
      clearInterval(timer);
      await Promise.all(inflight);
      return { latenciesMs, wrong, failed };
    },
  };
}
