/** The worker message protocol: one entry per task file in workers/. */
import type { ArgumentsVerdict } from '../core/exec/schema-compiler.js';

/** workers/tokens.ts: exact token counts with tiktoken (cl100k_base), one count per text. */
export interface CountTokensInput {
  readonly texts: readonly string[];
  /**
   * Counting may stop once the total passes this: the counts then add up to more than it, and are not
   * all exact (the texts not reached count 0). A prompt far over every window is refused without its whole
   * count (an 8 MB run of CJK text cost one pool thread ~10 s).
   */
  readonly stopAbove?: number;
}
export type CountTokensOutput = number[];

/**
 * workers/sign.ts: webhook signatures, batched (one thread hop signs a whole dispatch batch). Each item
 * is signed as HMAC-SHA256(secret, `<timestamp>.<body>`) and answered as `sha256=<hex>`, in input order.
 */
export interface SignItem {
  readonly secret: string;
  /** Unix seconds: the X-Webhook-Timestamp value. */
  readonly timestamp: number;
  readonly body: string;
}
export interface SignInput {
  readonly items: readonly SignItem[];
}
export type SignOutput = string[];

/**
 * workers/similarity.ts: the semantic router's profile index (hnswlib-node, cosine space).
 *
 * `build` runs on the shared pool (seconds for large profile sets, so never on the thread that serves
 * searches): it builds an HNSW graph from vectors transferred as one Float32Array and writes it to `file`.
 * `load` and `search` run on the router's dedicated similarity thread, which holds every workspace's index
 * by key, each tagged with a version: a search naming a version the thread does not hold (a profile change,
 * or a restarted thread) answers `found: false` and the caller reloads. Vectors of endpoint i are labels
 * `starts[i]` to `starts[i + 1] - 1`.
 */
export interface BuildIndexInput {
  readonly op: 'build';
  readonly file: string;
  readonly dimensions: number;
  /** count x dimensions floats, transferred. */
  readonly vectors: Float32Array<ArrayBuffer>;
  readonly m: number;
  readonly efConstruction: number;
  /**
   * Set by the pool (one shared cell): non-zero once the pool is closing. The build checks it between
   * points and gives up there, so a stop never has to terminate a thread inside hnswlib's native code
   * (a thread terminated inside a Node-API call aborts the whole process: SIGABRT).
   */
  readonly cancel?: Int32Array;
}
export interface BuildIndexOutput {
  readonly count: number;
}

export interface LoadIndexInput {
  readonly op: 'load';
  readonly key: string;
  readonly version: number;
  readonly file: string;
  readonly dimensions: number;
  readonly starts: Int32Array;
  readonly efSearch: number;
  /** The same vectors as the build, transferred: exact scores (the incumbent) read them directly. */
  readonly vectors: Float32Array<ArrayBuffer>;
}
export interface LoadIndexOutput {
  readonly count: number;
}

export interface SearchIndexInput {
  readonly op: 'search';
  readonly key: string;
  readonly version: number;
  /** The query embedding, transferred. */
  readonly query: Float32Array<ArrayBuffer>;
  readonly k: number;
  /** Endpoint positions that may match; null: all of them. */
  readonly allowed: Int32Array | null;
  /** Endpoint positions to score over all their vectors even when none is among the k nearest (the incumbent). */
  readonly exact: Int32Array;
}
/** Best cosine similarity per endpoint position that was scored. */
export type SearchIndexOutput =
  | { readonly found: true; readonly endpoints: Int32Array; readonly scores: Float32Array }
  | { readonly found: false };

/** Searches made in the same event-loop turn, sent as one task: piscina's per-task cost is paid once. */
export interface SearchBatchInput {
  readonly op: 'search-batch';
  readonly searches: readonly Omit<SearchIndexInput, 'op'>[];
}
export type SearchBatchOutput = SearchIndexOutput[];

export type SimilarityTask = BuildIndexInput | LoadIndexInput | SearchIndexInput | SearchBatchInput;

/**
 * The similarity thread's messages (similarity-thread.ts): a task with the id its answer carries back.
 * Queries go in transferred; search answers come back with their arrays transferred.
 */
export interface SimilarityRequest {
  readonly id: number;
  readonly task: LoadIndexInput | SearchBatchInput;
}
/** Sent after the last task: the thread answers what came before, then closes its port and ends. */
export interface SimilarityStop {
  readonly stop: true;
}
export type SimilarityReply =
  | { readonly id: number; readonly ok: true; readonly value: LoadIndexOutput | SearchBatchOutput | BuildIndexOutput | SearchIndexOutput }
  | { readonly id: number; readonly ok: false; readonly message: string };

/**
 * The schema threads' messages (schema-pool.ts, schema-thread.ts): tool schemas compiled and arguments
 * validated off the event loop (issue 31). `check` compiles a manifest's schemas and answers the first
 * that cannot be used; `validate` checks one invocation's arguments against its tool's schema, whose
 * compiled validator the thread keeps by `key` (sha256 of the canonical JSON).
 */
export type SchemaTask =
  | { readonly op: 'check'; readonly schemas: readonly Record<string, unknown>[] }
  | { readonly op: 'validate'; readonly key: string; readonly schema: Record<string, unknown>; readonly args: Record<string, unknown> };
/** The first schema (by position) that cannot be used, and why; null: all can. */
export type SchemaCheckOutput = { readonly index: number; readonly problem: string } | null;
export interface SchemaRequest {
  readonly id: number;
  readonly task: SchemaTask;
}
export type SchemaReply =
  | { readonly id: number; readonly ok: true; readonly value: SchemaCheckOutput | ArgumentsVerdict }
  | { readonly id: number; readonly ok: false; readonly message: string };
