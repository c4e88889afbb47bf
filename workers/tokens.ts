/**
 * Token counting with tiktoken, off the event loop. The encoder is loaded once per worker thread at
 * module load (about 120 ms), so the first task does not pay it.
 */
import { setPriority } from 'node:os';
import { get_encoding } from 'tiktoken';
import type { CountTokensInput, CountTokensOutput } from '../src/pool/tasks.js';

/**
 * Counting a 200k-character prompt takes ~40 ms of CPU. Where cores are scarce this thread must yield to
 * the event loop, or small requests queue behind big prompts: on Linux, setpriority on pid 0 from a
 * worker renices only this thread. Best effort: where it is refused, the thread keeps normal priority.
 */
try {
  setPriority(0, 10);
} catch {
  // not permitted here: keep the default priority
}

const encoding = get_encoding('cl100k_base');

export default function countTokens(input: CountTokensInput): CountTokensOutput {
  // Special-token text in user content is counted as plain text, never as control tokens.
  return input.texts.map((text) => encoding.encode(text, [], []).length);
}
