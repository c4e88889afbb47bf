/**
 * Segment mode: the gateway holds the session's audio, cuts segments on client commit or on its own
 * energy VAD, sends each segment as a WAV file to the endpoint's transcription route (any
 * OpenAI-compatible transcription server), and emits the transcripts in commit order. Up to
 * `max_inflight_segments` segments are transcribed at once; later ones wait their turn.
 */
import { audioTokensForMs, fromUsageObject, textTokens, type AudioUsage } from '../../core/audio/audio-usage.js';
import { multipartBody } from '../../core/audio/multipart.js';
import { pcm16DurationMs, pcm16ToWav } from '../../core/audio/wav.js';
import { deadlinesFor } from '../../core/chat/deadlines.js';
import { isPromise } from '../../core/coordination/admission-port.js';
import { eventError, newItemId, parseClientEvent, type ClientEvent, type Update } from '../../schemas/realtime-events.js';
import { PcmBuffer } from '../../core/realtime/pcm-buffer.js';
import { EnergyVad } from '../../core/realtime/vad.js';
import { GatewayError } from '../../errors.js';
import { callUpstream, UpstreamDeadline } from '../../upstream/upstream-call.js';
import { applyUpdate, CLIENT_DEFAULT_THRESHOLD, commitRefusal, initialState, PCM16_RATE, sessionObject, SessionIo, type RealtimeContext, type SessionState } from './realtime-session.js';
import { readCapped } from '../../upstream/answer-cap.js';
import type { RealtimeSession, RealtimeSocket } from './realtime-socket.js';

type Result = { readonly ok: true; readonly text: string; readonly usage: AudioUsage } | { readonly ok: false; readonly error: GatewayError };

interface Segment {
  readonly itemId: string;
  readonly pcm: Buffer;
  refused: GatewayError | null;
  /** Its admission is still being decided (an asynchronous admission port): it starts once it is. */
  admitting: boolean;
  result: Result | null;
  started: boolean;
}

const ms = (samples: number): number => Math.round((samples / PCM16_RATE) * 1000);

export class SegmentSession implements RealtimeSession {
  readonly #io: SessionIo;
  readonly #state: SessionState;
  readonly #buffer = new PcmBuffer();
  /** One per segment in flight: a segment's deadline must not cut the others. */
  readonly #aborts = new Set<UpstreamDeadline>();
  readonly #queue: Segment[] = [];
  #vad: EnergyVad | null = null;
  #speechItem: string | null = null;
  #speechStart = 0;
  #lastItem: string | null = null;
  #inflight = 0;
  /** The socket is gone: a segment admitted after that (asynchronously) is not transcribed. */
  #closed = false;

  constructor(socket: RealtimeSocket, ctx: RealtimeContext) {
    this.#io = new SessionIo(socket, ctx);
    this.#state = initialState(ctx);
    this.#vad = this.#makeVad();
    this.#io.sessionEvent('created', sessionObject(this.#io.id, this.#state));
  }

  message(data: Buffer, isBinary: boolean): void {
    if (!this.#io.touch()) return;
    const parsed = parseClientEvent(data, isBinary);
    if (!parsed.ok) return this.#io.error(parsed.error, parsed.eventId);
    const id = parsed.event.event_id ?? null;
    if (parsed.pcm) return this.#append(parsed.pcm, id);
    if (parsed.update) return this.#update(parsed.update, id);
    this.#handle(parsed.event, id);
  }

  closed(code: number, reason: string): void {
    this.#closed = true;
    for (const a of this.#aborts) a.abort();
    this.#io.closed(code, reason);
  }

  overflow(buffered: number): void {
    this.#io.overflow(buffered);
  }

  tooLarge(): void {
    this.#io.tooLarge();
  }

  shutdown(): void {
    this.#io.error(new GatewayError('service_draining', { message: 'The server is shutting down; reconnect to continue.' }));
  }

  #update(update: Update, id: string | null): void {
    if (!this.#io.acceptUpdate(update, id)) return;
    applyUpdate(this.#state, update.session, this.#io.ctx);
    this.#vad = this.#makeVad();
    this.#speechItem = null;
    this.#io.sessionEvent('updated', sessionObject(this.#io.id, this.#state));
  }

  #handle(event: ClientEvent, id: string | null): void {
    if (event.type === 'input_audio_buffer.commit') {
      const refused = commitRefusal(ms(this.#buffer.end - this.#buffer.start));
      if (refused) return this.#io.error(refused, id);
      this.#cut(this.#buffer.start, this.#speechItem ?? newItemId());
    } else if (event.type === 'input_audio_buffer.clear') {
      this.#buffer.clear();
      this.#vad?.reset();
      this.#speechItem = null;
      this.#io.event('input_audio_buffer.cleared');
    }
  }

  #append(pcm: Buffer, id: string | null): void {
    if (this.#buffer.bytes + pcm.length > this.#io.ctx.settings.max_buffer_bytes) {
      const max = this.#io.ctx.settings.max_buffer_bytes;
      return this.#io.error(new GatewayError('input_audio_buffer_full', { param: 'audio', message: `The input audio buffer would exceed ${max} bytes; commit or clear it. This append was dropped.` }), id);
    }
    this.#buffer.append(pcm);
    this.#io.countAudio(pcm.length);
    if (!this.#vad) return;
    const prefix = Math.round(((this.#state.turnDetection?.prefix_padding_ms ?? 0) / 1000) * PCM16_RATE);
    for (const e of this.#vad.push(pcm)) {
      if (e.kind === 'speech_started') {
        this.#speechItem = newItemId();
        this.#speechStart = Math.max(0, e.sample - prefix);
        this.#io.event('input_audio_buffer.speech_started', { audio_start_ms: ms(this.#speechStart), item_id: this.#speechItem });
      } else if (this.#speechItem) {
        this.#io.event('input_audio_buffer.speech_stopped', { audio_end_ms: ms(e.sample), item_id: this.#speechItem });
        this.#cut(this.#speechStart, this.#speechItem);
      }
    }
    // Nobody speaks: keep only the prefix padding, so silence never piles up.
    if (!this.#vad.speaking && !this.#speechItem) this.#buffer.dropBefore(this.#buffer.end - prefix);
  }

  #cut(from: number, itemId: string): void {
    const pcm = this.#buffer.take(from, this.#buffer.end);
    this.#vad?.reset();
    this.#speechItem = null;
    this.#io.event('input_audio_buffer.committed', { previous_item_id: this.#lastItem, item_id: itemId });
    this.#lastItem = itemId;
    const verdict = this.#io.admitSegment();
    const segment: Segment = { itemId, pcm, refused: null, admitting: isPromise(verdict), result: null, started: false };
    if (isPromise(verdict)) {
      void verdict.then((refused) => {
        segment.refused = refused;
        segment.admitting = false;
        this.#startMore();
      });
    } else {
      segment.refused = verdict;
    }
    this.#queue.push(segment);
    this.#startMore();
  }

  #makeVad(): EnergyVad | null {
    const td = this.#state.turnDetection;
    if (!td) return null;
    const { vad } = this.#io.ctx.settings;
    const threshold = Math.min(0.99, vad.threshold * ((td.threshold ?? CLIENT_DEFAULT_THRESHOLD) / CLIENT_DEFAULT_THRESHOLD));
    // An update rebuilds the detector: its positions go on from the session's, not from zero.
    return new EnergyVad({ threshold, silenceMs: td.silence_duration_ms ?? vad.silence_ms }, PCM16_RATE, this.#buffer.end);
  }

  #startMore(): void {
    if (this.#closed) return;
    for (const s of this.#queue) {
      if (this.#inflight >= this.#io.ctx.settings.max_inflight_segments) return;
      if (s.started) continue;
      // Segments start in commit order: one still waiting for its admission holds back those after it.
      if (s.admitting) return;
      s.started = true;
      if (s.refused) {
        s.result = { ok: false, error: s.refused };
        continue;
      }
      this.#inflight += 1;
      void this.#transcribe(s).then((result) => {
        this.#inflight -= 1;
        s.result = result;
        this.#emitReady();
        this.#startMore();
      });
    }
    this.#emitReady();
  }

  /** Transcripts leave in commit order, whatever order the upstream answers in. */
  #emitReady(): void {
    while (this.#queue[0]?.result) {
      const s = this.#queue.shift() as Segment;
      const r = s.result as Result;
      if (r.ok) {
        if (r.text) this.#io.event('conversation.item.input_audio_transcription.delta', { item_id: s.itemId, content_index: 0, delta: r.text });
        this.#io.event('conversation.item.input_audio_transcription.completed', { item_id: s.itemId, content_index: 0, transcript: r.text, usage: wireUsage(r.usage) });
      } else {
        this.#io.event('conversation.item.input_audio_transcription.failed', { item_id: s.itemId, content_index: 0, error: eventError(r.error) });
      }
    }
  }

  async #transcribe(s: Segment): Promise<Result> {
    const { services, endpoint } = this.#io.ctx;
    const started = performance.now();
    const deadlines = deadlinesFor(endpoint.tier, services.timeouts, false);
    // No client request to follow: the session's close aborts every segment in flight (#aborts).
    const abort = new UpstreamDeadline(deadlines.requestMs, null, 'transcription server', null, null);
    this.#aborts.add(abort);
    const fields: [string, string][] = [['model', endpoint.upstream.model], ['response_format', 'json']];
    if (this.#state.language) fields.push(['language', this.#state.language]);
    if (this.#state.prompt) fields.push(['prompt', this.#state.prompt]);
    const { body, contentType } = multipartBody(`switchboard-${s.itemId}`, fields, { name: 'file', filename: `${s.itemId}.wav`, contentType: 'audio/wav', data: pcm16ToWav(s.pcm, PCM16_RATE) });
    try {
      // The endpoint's pool: a segment goes to one of its servers, and to another only when the first
      // could not even be connected to.
      const res = await callUpstream(services.upstream, endpoint, { path: '/audio/transcriptions', body, contentType, signal: abort, headersTimeoutMs: deadlines.requestMs, bodyTimeoutMs: deadlines.idleMs }, true);
      const text = (await readCapped(res.body)).toString('utf8');
      const parsed = JSON.parse(text) as { text?: unknown; usage?: unknown };
      const transcript = typeof parsed.text === 'string' ? parsed.text.trim() : '';
      const usage = fromUsageObject(parsed.usage, transcript) ?? { promptTokens: audioTokensForMs(pcm16DurationMs(s.pcm.length, PCM16_RATE)), completionTokens: textTokens(transcript), source: 'estimated' as const };
      this.#io.recordSegment(s.itemId, 'completed', usage, started);
      return { ok: true, text: transcript, usage };
    } catch (err) {
      const e =
        err instanceof SyntaxError && !abort.timedOut
          ? new GatewayError('internal_error', { message: 'The transcription server returned a response that is not JSON.' })
          : abort.failure(err);
      this.#io.recordSegment(s.itemId, abort.timedOut ? 'timeout' : abort.aborted ? 'aborted' : 'error', null, started);
      return { ok: false, error: e };
    } finally {
      abort.done();
      this.#aborts.delete(abort);
    }
  }
}

function wireUsage(u: AudioUsage): Record<string, unknown> {
  return { type: 'tokens', input_tokens: u.promptTokens, output_tokens: u.completionTokens, total_tokens: u.promptTokens + u.completionTokens };
}
