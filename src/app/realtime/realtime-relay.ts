/**
 * Relay mode: the session is bridged to an upstream realtime WebSocket that speaks the beta protocol.
 * Client events are checked here first (a bad one gets its `error` event and never reaches the upstream)
 * and forwarded byte for byte, except session updates: either dialect's goes up as a
 * `transcription_session.update` whose transcription model, when it has one, is the endpoint's upstream
 * model. The gateway's own update, sent first on connect, tells the upstream that model, so a client that
 * never sends an update is not left on the upstream's default. Upstream events come back as sent, except
 * the session objects, which show the client's model again, in the client's dialect, and the upstream's
 * answer to the gateway's own update, which the client did not ask for. Each upstream commit is admitted
 * as a request (limits, budgets); each completed transcript is one usage row.
 */
import { WebSocket } from 'undici';
import { audioTokensForMs, fromUsageObject, textTokens } from '../../core/audio/audio-usage.js';
import { pcm16DurationMs } from '../../core/audio/wav.js';
import { isPromise } from '../../core/coordination/admission-port.js';
import { parseClientEvent } from '../../schemas/realtime-events.js';
import { GatewayError } from '../../errors.js';
import { applyUpdate, commitRefusal, initialState, PCM16_RATE, SessionIo, type RealtimeContext, type SegmentVerdict, type SessionState } from './realtime-session.js';
import type { RealtimeSession, RealtimeSocket } from './realtime-socket.js';

type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The event_id of the gateway's own update: an upstream error naming it answers that update. */
const OWN_UPDATE_ID = 'event_switchboard_session';

/** The upstream's URL: configured, or the endpoint's base URL over ws(s) at /realtime. */
export function relayUrl(ctx: RealtimeContext): string {
  if (ctx.settings.upstream_ws_url) return ctx.settings.upstream_ws_url;
  const base = ctx.endpoint.upstream.base_url.replace(/^http/, 'ws').replace(/\/+$/, '');
  return `${base}/realtime?intent=transcription`;
}

export class RelaySession implements RealtimeSession {
  readonly #io: SessionIo;
  readonly #state: SessionState;
  readonly #upstream: WebSocket;
  /** Client frames that arrived before the upstream connection opened. */
  #pending: string[] = [];
  #pendingBytes = 0;
  #closing = false;
  /** Audio bytes appended since the last commit, and per committed item: for estimated usage. */
  #appended = 0;
  readonly #items = new Map<string, { bytes: number; started: number }>();
  /** Upstream events that arrived while a segment's admission was being decided (asynchronously), in order. */
  #held: string[] | null = null;
  /** The gateway's own update went up and the upstream has not answered it yet. */
  #ownUpdatePending = false;

  constructor(socket: RealtimeSocket, ctx: RealtimeContext) {
    this.#io = new SessionIo(socket, ctx);
    this.#state = initialState(ctx);
    const key = ctx.services.upstream.apiKey(ctx.endpoint);
    const headers: Record<string, string> = { 'openai-beta': 'realtime=v1' };
    if (key) headers.authorization = `Bearer ${key}`;
    this.#upstream = new WebSocket(relayUrl(ctx), { headers });
    this.#upstream.addEventListener('open', () => {
      // Before anything of the client's: the session's model is the endpoint's from the first audio on.
      const own = { type: 'transcription_session.update', event_id: OWN_UPDATE_ID, session: { input_audio_transcription: { model: ctx.endpoint.upstream.model } } };
      this.#upstream.send(JSON.stringify(own));
      this.#ownUpdatePending = true;
      for (const text of this.#pending) this.#upstream.send(text);
      this.#pending = [];
      this.#pendingBytes = 0;
    });
    this.#upstream.addEventListener('message', (ev) => {
      if (typeof ev.data === 'string') this.#fromUpstream(ev.data);
    });
    this.#upstream.addEventListener('close', (ev) => {
      if (this.#closing) return;
      this.#closing = true;
      const why = ev.code === 1000 ? 'closed the session' : `closed the connection (code ${ev.code})`;
      this.#io.fail(new GatewayError('upstream_error', { message: `The realtime model server ${why}.` }), ev.code === 1000 ? 1000 : 1011, ev.code === 1000 ? 'completed' : 'error');
    });
    this.#upstream.addEventListener('error', () => undefined);
  }

  message(data: Buffer, isBinary: boolean): void {
    if (!this.#io.touch()) return;
    const parsed = parseClientEvent(data, isBinary);
    if (!parsed.ok) return this.#io.error(parsed.error, parsed.eventId);
    const event = parsed.event;
    let text = data.toString('utf8');
    if (parsed.update) {
      if (!this.#io.acceptUpdate(parsed.update, event.event_id ?? null)) return;
      applyUpdate(this.#state, parsed.update.session, this.#io.ctx);
      // Fields around the session (other than its type) go up as the client sent them.
      text = JSON.stringify({ ...(JSON.parse(text) as Json), type: 'transcription_session.update', session: this.#upstreamSession(parsed.update.raw) });
    } else if (parsed.pcm) {
      this.#appended += parsed.pcm.length;
      this.#io.countAudio(parsed.pcm.length);
    }
    else if (event.type === 'input_audio_buffer.clear') this.#appended = 0;
    else if (event.type === 'input_audio_buffer.commit') {
      // Refused here as segment mode refuses it, not left to the upstream, which may commit any length.
      const refused = commitRefusal(Math.round(pcm16DurationMs(this.#appended, PCM16_RATE)));
      if (refused) return this.#io.error(refused, event.event_id ?? null);
    }
    this.#toUpstream(text);
  }

  /**
   * A client update as it goes up. The upstream replaces a transcription object whole, so one is sent only
   * when the client sent one (its language, prompt and the rest kept, the model made the endpoint's); the
   * gateway's own update told the upstream the model on connect. A null transcription means "unchanged"
   * here (schemas/realtime-events.ts), so it does not go up to clear the upstream's.
   */
  #upstreamSession(raw: Json): Json {
    const session: Json = { ...raw };
    const own = raw.input_audio_transcription;
    if (isObject(own)) session.input_audio_transcription = { ...own, model: this.#io.ctx.endpoint.upstream.model };
    else delete session.input_audio_transcription;
    return session;
  }

  closed(code: number, reason: string): void {
    this.#closing = true;
    if (this.#upstream.readyState === WebSocket.OPEN || this.#upstream.readyState === WebSocket.CONNECTING) this.#upstream.close(1000);
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

  /** The client sends faster than the upstream takes: the same cap as the other direction. */
  #toUpstream(text: string): void {
    const cap = this.#io.ctx.settings.max_buffer_bytes;
    if (this.#upstream.readyState === WebSocket.CONNECTING) {
      this.#pendingBytes += text.length;
      if (this.#pendingBytes > cap) return this.#tooFast();
      this.#pending.push(text);
      return;
    }
    if (this.#upstream.readyState !== WebSocket.OPEN) return;
    if (this.#upstream.bufferedAmount > cap) return this.#tooFast();
    this.#upstream.send(text);
  }

  #tooFast(): void {
    this.#closing = true;
    this.#upstream.close(1000);
    this.#io.fail(new GatewayError('input_audio_buffer_full', { message: 'The model server is not keeping up with the audio sent; the session is closed.' }), 1008, 'error');
  }

  #fromUpstream(text: string): void {
    if (this.#held) {
      this.#held.push(text);
      return;
    }
    let event: Json;
    try {
      event = JSON.parse(text) as Json;
    } catch {
      return;
    }
    const type = event.type;
    if (this.#ownUpdatePending && this.#answersOwnUpdate(event)) {
      this.#ownUpdatePending = false;
      // Its `updated` is not the client's to see; an error about it (the upstream refuses the endpoint's
      // model) is, as nothing else would tell the client why its audio is not transcribed.
      if (type === 'transcription_session.updated') return;
    }
    if (type === 'transcription_session.created' || type === 'transcription_session.updated') {
      const session = isObject(event.session) ? { ...event.session } : {};
      if (isObject(session.input_audio_transcription)) session.input_audio_transcription = { ...session.input_audio_transcription, model: this.#state.model };
      // `created` predates the gateway's own update: it shows the model that update sets.
      else if (type === 'transcription_session.created') session.input_audio_transcription = { model: this.#state.model };
      const rest: Json = { ...event };
      delete rest.type;
      delete rest.session;
      this.#io.sessionEvent(type === 'transcription_session.created' ? 'created' : 'updated', session, rest);
      return;
    }
    if (type === 'input_audio_buffer.committed' && typeof event.item_id === 'string') {
      const itemId = event.item_id;
      const bytes = this.#appended;
      this.#appended = 0;
      const verdict = this.#io.admitSegment();
      if (!isPromise(verdict)) return this.#committed(itemId, bytes, text, verdict);
      // The events after this one wait for its verdict, so the client sees them in the upstream's order.
      this.#held = [];
      void verdict.then((refused) => {
        const held = this.#held ?? [];
        this.#held = null;
        this.#committed(itemId, bytes, text, refused);
        for (const later of held) this.#fromUpstream(later);
      });
      return;
    } else if ((type === 'conversation.item.input_audio_transcription.completed' || type === 'conversation.item.input_audio_transcription.failed') && typeof event.item_id === 'string') {
      this.#account(event, type.endsWith('completed'));
    }
    this.#io.sendText(text);
  }

  /** The upstream answers updates in order, and the gateway's own went up before any of the client's. */
  #answersOwnUpdate(event: Json): boolean {
    if (event.type === 'transcription_session.updated') return true;
    return event.type === 'error' && isObject(event.error) && event.error.event_id === OWN_UPDATE_ID;
  }

  /** A committed segment's verdict: a refusal ends the session (SPEC Limits), else its usage is tracked. */
  #committed(itemId: string, bytes: number, text: string, refused: SegmentVerdict): void {
    if (refused) {
      this.#closing = true;
      this.#upstream.close(1000);
      this.#io.sendText(text);
      return this.#io.fail(refused, 1008, 'error');
    }
    this.#items.set(itemId, { bytes, started: performance.now() });
    this.#io.sendText(text);
  }

  #account(event: Json, ok: boolean): void {
    const itemId = event.item_id as string;
    const item = this.#items.get(itemId);
    this.#items.delete(itemId);
    const transcript = typeof event.transcript === 'string' ? event.transcript : '';
    const usage = ok
      ? (fromUsageObject(event.usage, transcript) ?? { promptTokens: audioTokensForMs(pcm16DurationMs(item?.bytes ?? 0, PCM16_RATE)), completionTokens: textTokens(transcript), source: 'estimated' as const })
      : null;
    this.#io.recordSegment(itemId, ok ? 'completed' : 'error', usage, item?.started ?? performance.now());
  }
}
