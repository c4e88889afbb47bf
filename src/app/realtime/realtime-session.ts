/**
 * What both realtime modes share: the session's negotiated settings, its dialect (beta or GA, see
 * core/realtime/dialect.ts), writing events to the client (one `error` event per bad message), the idle
 * timer, per-segment admission against the project's limits and budgets, and the usage rows (one per
 * segment, one per session).
 */
import { randomBytes } from 'node:crypto';
import type { RealtimeConfig } from '../../config.js';
import type { AudioUsage } from '../../core/audio/audio-usage.js';
import type { AuthenticatedKey } from '../../core/auth/authenticate.js';
import { isPromise } from '../../core/coordination/admission-port.js';
import { budgetError } from '../../core/limits/budget-errors.js';
import { refusalError } from '../../core/limits/limit-headers.js';
import type { Admission } from '../../core/limits/rate-limiter.js';
import { gaSessionFromBeta, sessionEventType, UPDATE_EVENT, type Dialect } from '../../core/realtime/dialect.js';
import { errorEvent, serverEvent, type SessionUpdate, type TurnDetection, type Update } from '../../schemas/realtime-events.js';
import type { EndpointRecord } from '../../core/records.js';
import { GatewayError } from '../../errors.js';
import { recordAudioUsage, type AudioAccount } from '../audio/audio-call.js';
import type { ChatServices, Outcome } from '../chat/chat-dispatch.js';
import type { RealtimeSocket } from './realtime-socket.js';

/** The realtime audio format: 24 kHz, mono, 16-bit. */
const PCM16_BYTES_PER_SECOND = 24_000 * 2;

export interface RealtimeContext {
  readonly services: ChatServices;
  readonly endpoint: EndpointRecord;
  readonly settings: RealtimeConfig;
  readonly auth: AuthenticatedKey;
  readonly account: AudioAccount;
  /** The upgrade request's id: the session's usage row. */
  readonly requestId: string;
  /** What the upgrade declared (header, subprotocol, `?model=`), or null: the first update decides. */
  readonly dialect: Dialect | null;
}

/** The session as negotiated with the client (the turn detection numbers are the client's). */
export interface SessionState {
  model: string;
  language: string | null;
  prompt: string;
  turnDetection: TurnDetection | null;
}

export const PCM16_RATE = 24_000;
/** The client's threshold scale: 0.5 means the endpoint's configured energy threshold. */
export const CLIENT_DEFAULT_THRESHOLD = 0.5;

export function initialState(ctx: RealtimeContext): SessionState {
  const { vad } = ctx.settings;
  return {
    model: ctx.endpoint.model.id,
    language: null,
    prompt: '',
    turnDetection: { type: 'server_vad', threshold: CLIENT_DEFAULT_THRESHOLD, prefix_padding_ms: vad.prefix_padding_ms, silence_duration_ms: vad.silence_ms },
  };
}

/** Applies a transcription_session.update; fields left out keep their value. */
export function applyUpdate(state: SessionState, session: SessionUpdate, ctx: RealtimeContext): void {
  const t = session.input_audio_transcription;
  if (t) {
    if (t.model !== undefined) state.model = t.model;
    if (t.language !== undefined) state.language = t.language;
    if (t.prompt !== undefined) state.prompt = t.prompt;
  }
  if (session.turn_detection === null) state.turnDetection = null;
  else if (session.turn_detection) {
    const base = state.turnDetection ?? initialState(ctx).turnDetection;
    state.turnDetection = { ...base, ...stripUndefined(session.turn_detection), type: 'server_vad' } as TurnDetection;
  }
}

function stripUndefined(o: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined));
}

export function sessionObject(id: string, state: SessionState): Record<string, unknown> {
  return {
    id,
    object: 'realtime.transcription_session',
    input_audio_format: 'pcm16',
    input_audio_transcription: { model: state.model, language: state.language, prompt: state.prompt },
    turn_detection: state.turnDetection,
    input_audio_noise_reduction: null,
    include: null,
  };
}

/** The least audio a client commit may cut, in either mode (docs/realtime.md, "Client events"). */
const MIN_COMMIT_MS = 100;

/** The error a client commit of `ms` milliseconds of buffered audio gets, or null when that is enough. */
export function commitRefusal(ms: number): GatewayError | null {
  if (ms >= MIN_COMMIT_MS) return null;
  return new GatewayError('input_audio_buffer_commit_empty', { message: `Cannot commit: the buffer holds ${ms} ms of audio; at least ${MIN_COMMIT_MS} ms are needed.` });
}

/** A segment's admission: null admitted, else the refusal its transcription answers with. */
export type SegmentVerdict = GatewayError | null;

/**
 * Client events a session may send in a second (audio in 10 ms chunks is 100). 200,000 one-byte frames on
 * one socket held the event loop 5 s, every tenant's HTTP with it, each answered by an error event (found
 * from outside); the flood now ends the session after this many.
 */
export const MAX_EVENTS_PER_SECOND = 1000;

export class SessionIo {
  readonly id = `sess_${randomBytes(10).toString('hex')}`;
  readonly ctx: RealtimeContext;
  readonly #socket: RealtimeSocket;
  readonly #started = performance.now();
  #idle: NodeJS.Timeout;
  #outcome: Outcome | null = null;
  #recorded = false;
  /** PCM16 bytes the client appended: the session's audio seconds in its end-of-session log line. */
  #audioBytes = 0;
  #dialect: Dialect | null;
  /** The last asynchronous segment admission: the next one's verdict settles after it. */
  #admitting: Promise<SegmentVerdict> | null = null;
  #second = -1;
  #eventsThisSecond = 0;
  /** `created` is sent before any client message: in the declared dialect, else the beta (the older default). */
  readonly #createdDialect: Dialect;

  constructor(socket: RealtimeSocket, ctx: RealtimeContext) {
    this.#socket = socket;
    this.ctx = ctx;
    this.#dialect = ctx.dialect;
    this.#createdDialect = ctx.dialect ?? 'beta';
    this.#idle = setTimeout(() => this.#onIdle(), ctx.settings.idle_timeout_ms);
  }

  /**
   * The first update fixes the dialect of a session whose upgrade declared none; an update in the other
   * dialect afterwards gets an error event (false) rather than a reply the client would not recognize.
   */
  acceptUpdate(update: Update, clientEventId: string | null): boolean {
    this.#dialect ??= update.dialect;
    if (update.dialect === this.#dialect) return true;
    const [name, other] = this.#dialect === 'ga' ? ['GA', 'beta'] : ['beta', 'GA'];
    const message = `This session speaks the ${name} realtime protocol: configure it with ${UPDATE_EVENT[this.#dialect]}, not the ${other} ${UPDATE_EVENT[update.dialect]} (docs/realtime.md, "Dialects").`;
    this.error(new GatewayError('invalid_request', { param: 'type', message }), clientEventId);
    return false;
  }

  /**
   * `created` or `updated` with a session object given in the beta shape, in the session's dialect.
   * `extra`: the event's other fields (a relayed upstream event keeps its own event_id).
   */
  sessionEvent(kind: 'created' | 'updated', session: Record<string, unknown>, extra: Record<string, unknown> = {}): void {
    const dialect = kind === 'created' ? this.#createdDialect : (this.#dialect ?? this.#createdDialect);
    this.event(sessionEventType(dialect, kind), { ...extra, session: dialect === 'ga' ? gaSessionFromBeta(session) : session });
  }

  get open(): boolean {
    return this.#socket.open;
  }

  send(event: Record<string, unknown>): void {
    this.#socket.send(JSON.stringify(event));
  }

  sendText(text: string): void {
    this.#socket.send(text);
  }

  event(type: string, fields: Record<string, unknown> = {}): void {
    this.send(serverEvent(type, fields));
  }

  error(e: GatewayError, clientEventId: string | null = null): void {
    this.send(errorEvent(e, clientEventId));
  }

  /** Audio the client appended (24 kHz mono PCM16). */
  countAudio(bytes: number): void {
    this.#audioBytes += bytes;
  }

  /**
   * Any client event: the session is alive. False once the client sent more than MAX_EVENTS_PER_SECOND in
   * one second of the gateway's clock: the session is then ended (1008), and the event is not handled.
   */
  touch(): boolean {
    this.#idle.refresh();
    const second = Math.floor(this.ctx.services.now() / 1000);
    if (second !== this.#second) {
      this.#second = second;
      this.#eventsThisSecond = 0;
    }
    if (++this.#eventsThisSecond <= MAX_EVENTS_PER_SECOND) return true;
    if (this.#socket.open) {
      const e = new GatewayError('rate_limit_exceeded', { message: `More than ${MAX_EVENTS_PER_SECOND} client events in one second; the session is closed.` });
      this.fail(e, 1008, 'error');
    }
    return false;
  }

  /** Ends the session from our side with a last error event. */
  fail(e: GatewayError, code: number, outcome: Outcome): void {
    if (!this.#socket.open) return;
    this.#outcome = outcome;
    this.error(e);
    this.#socket.end(code, e.message.slice(0, 120));
  }

  /** The client stopped reading: one last event queued past the cap, then the socket is ended (1008). */
  overflow(buffered: number): void {
    this.#outcome = 'error';
    const e = new GatewayError('client_too_slow', { message: `The client is not reading its events (${buffered} bytes waiting); the session is closed.` });
    this.#socket.sendAnyway(JSON.stringify(errorEvent(e, null)));
  }

  /**
   * The client sent a message over audio.realtime_max_message_bytes: the socket is ended with 1009 next, or
   * was dropped already (past uWS's ceiling). The gateway ended it either way: `error`, not `aborted`.
   */
  tooLarge(): void {
    this.#outcome = 'error';
  }

  /**
   * Segments are requests too (SPEC Limits): the project's window, the key quota and the budgets. A
   * Promise only from an asynchronous admission port (shared limits); verdicts then settle in the order
   * the segments were cut, whatever order the port answers in, each one's budget read once it is admitted.
   */
  admitSegment(): SegmentVerdict | Promise<SegmentVerdict> {
    const { services, auth } = this.ctx;
    const now = services.now();
    const admission = services.limits.admit(auth.project, auth.key, 'inference', now);
    if (!isPromise(admission)) return this.#verdict(admission, now);
    const verdict = Promise.all([admission, this.#admitting]).then(
      ([decided]) => this.#verdict(decided, now),
      (err: unknown) => (err instanceof GatewayError ? err : new GatewayError('internal_error', { message: 'The rate limiter could not admit this segment.' })),
    );
    this.#admitting = verdict;
    return verdict;
  }

  #verdict(admission: Admission, now: number): SegmentVerdict {
    const { services, auth, endpoint, account } = this.ctx;
    if (admission.refusal) return refusalError(admission.refusal);
    const verdict = services.budgets.check(auth.project.id, endpoint.id, account.workspaceId, now);
    return verdict?.exhausted ? budgetError(verdict.exhausted) : null;
  }

  recordSegment(itemId: string, outcome: Outcome, usage: AudioUsage | null, started: number): void {
    recordAudioUsage(this.ctx.services, { requestId: itemId, endpoint: this.ctx.endpoint, account: this.ctx.account, route: 'realtime', outcome, usage, started, call: null });
    // The segment's transcript goes out as a WebSocket event, not an HTTP answer: journaled first.
    this.ctx.services.usage.settle();
  }

  /** Called once from the socket's close: the session's own row (no tokens; its duration and outcome). */
  closed(code: number, reason = ''): void {
    clearTimeout(this.#idle);
    if (this.#recorded) return;
    this.#recorded = true;
    const outcome = this.#outcome ?? (code === 1000 || code === 1001 || code === 1005 ? 'completed' : 'aborted');
    recordAudioUsage(this.ctx.services, { requestId: this.ctx.requestId, endpoint: this.ctx.endpoint, account: this.ctx.account, route: 'realtime', outcome, usage: null, started: this.#started, call: null });
    this.ctx.services.logger.info(
      {
        request_id: this.ctx.requestId,
        session_id: this.id,
        project: this.ctx.auth.project.id,
        endpoint: this.ctx.endpoint.slug,
        key_id: this.ctx.auth.key.id,
        duration_ms: Math.round(performance.now() - this.#started),
        audio_seconds: Math.round((this.#audioBytes / PCM16_BYTES_PER_SECOND) * 100) / 100,
        close_code: code,
        close_reason: reason || undefined,
        outcome,
      },
      'realtime session ended',
    );
  }

  #onIdle(): void {
    const seconds = this.ctx.settings.idle_timeout_ms / 1000;
    this.fail(new GatewayError('session_idle_timeout', { message: `No client event for ${seconds} s: the session is closed.` }), 1000, 'timeout');
  }
}
