/**
 * What a use case sees of the client: the request it serves (`TurnCaller`) and where its answer goes
 * (`TurnSink`). Declared here, narrow, so that src/app never imports src/http: the server's
 * IncomingRequest and Reply satisfy them structurally, as do the stand-ins that run a turn for someone
 * else (detached-caller.ts and recorded-answer.ts for batch lines, background responses and the
 * playground; the playground's relay, the Responses API's translating reply). Types only: nothing is wrapped or copied per request.
 */
import type { RequestTrace } from '../tracing/trace-port.js';

/** The access-log fields a use case fills in as it learns them (src/http/request.ts RequestLog has them all). */
export interface TurnLog {
  /** The endpoint's slug, once a router chose it. */
  endpoint?: string;
  upstreamMs?: number;
  /** Time to the first byte of a streamed answer. */
  ttftMs?: number;
  /** Time to the first content or reasoning token, and per output token after it (issue 14). */
  firstTokenMs?: number;
  tpotMs?: number;
  promptTokens?: number;
  completionTokens?: number;
}

/** The client's request as a use case reads it. */
export interface TurnCaller {
  readonly requestId: string;
  /** performance.now() when the request arrived. */
  readonly startedAt: number;
  /** Header names lower-case, as the server copied them. */
  readonly headers: Readonly<Record<string, string>>;
  readonly log: TurnLog;
  /** The client went away: nothing more is written, and the turn is billed as aborted. */
  readonly aborted: boolean;
  /** Aborted with the client; for pool tasks and fetches that take a signal. */
  readonly signal: AbortSignal;
  /** A plain callback on client abort: cheaper than an AbortSignal on the hot path. */
  onAbort(listener: () => void): void;
  /** The request's trace when tracing is on (src/tracing); null or absent otherwise (stand-ins have none). */
  readonly trace?: RequestTrace | null;
}

/** A request the semantic router routes: its decision row reads these too. */
export interface RoutedCaller extends TurnCaller {
  /** The API, or the dashboard's own chat (its turns run on a DetachedCaller). */
  readonly surface: 'api' | 'dashboard';
  readonly clientIp: string;
  header(name: string): string | undefined;
}

/**
 * Where a turn writes its answer: a whole JSON body, or a stream under backpressure (`write` false: wait
 * for `onWritable`). `onDrainDeadline` gives a stream its last words at a graceful stop's deadline.
 */
export interface TurnSink {
  readonly open: boolean;
  setHeader(name: string, value: string): void;
  json(status: number, body: unknown): void;
  /**
   * A JSON body already serialized (the buffered chat fast path, core/chat/completion-restamp.ts). Only
   * sinks that send JSON as it is have it; a sink that reshapes the answer leaves it out and gets `json`.
   */
  jsonText?(status: number, text: string): void;
  beginStream(status: number, contentType: string): void;
  write(chunk: string | Buffer): boolean;
  onWritable(handler: () => void): void;
  /** `last`: the stream's final bytes, handed over with the end (one socket write for both). */
  endStream(last?: string): void;
  onDrainDeadline(handler: () => void): void;
  /** A sink that answers a streamed chat turn in a shape of its own has one (the Responses reply). */
  readonly reshaper?: StreamReshaper;
}

/**
 * How a sink answers a streamed chat turn in its own shape. The chat stream (app/chat/chat-stream.ts) hands
 * it each piece as it comes, in order, and sends what it returns through `write` and `end`: a chunk that is
 * only content text reaches it as that text, never as a chat frame it would decode and read back (that
 * round trip was a tenth of a streamed Responses turn, issue 35).
 */
export interface StreamReshaper {
  /**
   * The frames a chunk that is only content text makes, given that text as the body of its JSON string
   * (escapes as the model sent them); null when it is not valid JSON text (the chunk then takes the full parse).
   */
  content(escaped: string): string | null;
  /** The frames a chat chunk makes that the chat path parsed and normalized (handed over as the object). */
  chunk(chunk: Record<string, unknown>): string;
  /** The frames chat SSE text makes (a chunk off the fast path, [DONE], an error event). */
  translate(chatFrames: string): string;
  /** Writes frames this reshaper made; false: wait for onWritable. */
  write(frames: string): boolean;
  /** Ends the stream; `frames` (made by this reshaper, perhaps none) go out with the end. */
  end(frames: string): void;
  /** SPEC `reasoning_effort`: the effort the turn was sent with when the mapping changed it (chat chunks carry it as x_adjusted_reasoning_effort). */
  adjustedEffort(effort: string): void;
}

/** A sink that also answers with bytes of its own content type (audio, embeddings passed through). */
export interface ByteSink extends TurnSink {
  send(status: number, body: string | Buffer, contentType: string): void;
}

/** The request and its reply together, as a route hands them over (src/http's RouteContext fits). */
export interface TurnExchange {
  readonly req: TurnCaller;
  readonly reply: TurnSink;
}

/** The same, for a turn the semantic router routes. */
export interface RoutedExchange {
  readonly req: RoutedCaller;
  readonly reply: TurnSink;
}

/** The same, for a use case that may answer with bytes of its own content type. */
export interface ByteExchange {
  readonly req: TurnCaller;
  readonly reply: ByteSink;
}
