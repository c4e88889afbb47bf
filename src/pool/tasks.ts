/** The worker message protocol: one entry per task file in workers/. */

/** workers/tokens.ts: exact token counts with tiktoken (cl100k_base), one count per text. */
export interface CountTokensInput {
  readonly texts: readonly string[];
}
export type CountTokensOutput = number[];
