/**
 * What the shared compatibility cases (compat-cases.ts) ask of a client library. Each library's test file
 * implements this once, in that library's own idiom (its chat model object, its tool helper, its
 * structured-output helper, its error classes), and the very same case list runs against it. The
 * fixtures below are the inputs every library gets, so the cases can assert exact outcomes: the
 * simulator answers them deterministically (docs/simulator.md).
 */
import { z } from 'zod';

/** Where a library points: only the base URL and the key change (SPEC "What the service does" 1). */
export interface Target {
  readonly baseURL: string;
  readonly apiKey: string;
  /** Installed as the library's `fetch` option, so a case can see every HTTP exchange it made. */
  readonly fetch: typeof globalThis.fetch;
}

/** The simulator's knobs (docs/simulator.md "Knobs"), sent as the `sim` body field the gateway passes on. */
export interface SimKnobs {
  readonly delay_ms?: number;
}

export interface CallOptions {
  readonly signal?: AbortSignal;
  readonly knobs?: SimKnobs;
  readonly temperature?: number;
  /** Streaming only: called with each non-empty text delta as the library hands it over. */
  readonly onDelta?: (delta: string) => void;
}

/** Token counts as the library reports them; undefined where it reports nothing. */
export interface TokenUsage {
  readonly input: number | undefined;
  readonly output: number | undefined;
  readonly total: number | undefined;
}

export interface ChatResult {
  readonly text: string;
  readonly usage: TokenUsage;
}

export interface StreamResult {
  /** Every non-empty text delta, in order. */
  readonly deltas: readonly string[];
  readonly usage: TokenUsage;
}

/** What a library's error object says about the HTTP error it came from, read from its own fields. */
export interface ErrorDetails {
  readonly status: number | undefined;
  readonly code: string | undefined;
  readonly message: string;
}

export const WeatherInput = z.object({
  city: z.string().describe('City name'),
  unit: z.enum(['celsius', 'fahrenheit']),
});
export type WeatherInput = z.infer<typeof WeatherInput>;

/** A tool the library itself runs: the case supplies `execute` and checks what it was given. */
export interface WeatherTool {
  readonly name: 'get_weather';
  readonly description: string;
  readonly schema: typeof WeatherInput;
  execute(input: WeatherInput): Promise<{ readonly forecast: string }>;
}

export interface ToolRoundTripResult {
  /** The model's final answer, after the tool result went back. */
  readonly text: string;
}

export const Person = z.object({
  name: z.string(),
  born: z.number().int(),
  languages: z.array(z.string()),
});
export type Person = z.infer<typeof Person>;

export interface EmbeddingResult {
  readonly vectors: readonly (readonly number[])[];
  /** Prompt tokens, where the library exposes them. */
  readonly tokens: number | undefined;
}

export interface CompatClient {
  /** The library and the version under test, for describe blocks. */
  readonly name: string;
  /** Whether the library hands back the embeddings' prompt-token usage at all (LangChain's does not). */
  readonly reportsEmbeddingTokens: boolean;
  /**
   * How the library's stream ends when its signal aborts mid-stream: the openai SDK's stream iterator
   * returns quietly (openai-node's Stream treats an abort as the caller's own stop); others throw.
   */
  readonly streamAbort: 'ends quietly' | 'throws its abort error';
  chat(target: Target, prompt: string, options?: CallOptions): Promise<ChatResult>;
  stream(target: Target, prompt: string, options?: CallOptions): Promise<StreamResult>;
  /** The library's own tool loop: the model calls the tool, the library runs it and sends the result back. */
  toolRoundTrip(target: Target, prompt: string, tool: WeatherTool): Promise<ToolRoundTripResult>;
  /** The library's structured-output helper with the Person schema; resolves with the parsed object. */
  structured(target: Target, prompt: string): Promise<Person>;
  embed(target: Target, texts: readonly string[]): Promise<EmbeddingResult>;
  /** Null when `error` is not the library's HTTP error type. */
  errorDetails(error: unknown): ErrorDetails | null;
  /** Whether `error` is how the library reports a call cancelled through its AbortSignal. */
  isAbort(error: unknown): boolean;
}
