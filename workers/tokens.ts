/**
 * Token counting with tiktoken, off the event loop. The encoder is loaded once per worker thread at
 * module load (about 120 ms), so the first task does not pay it.
 */
import { get_encoding } from 'tiktoken';
import type { CountTokensInput, CountTokensOutput } from '../src/pool/tasks.js';
import { yieldToEventLoop } from '../src/thread-priority.js';

// Counting a 200k-character prompt takes ~40 ms of CPU: where cores are scarce, small requests must not
// queue behind it.
yieldToEventLoop();

const encoding = get_encoding('cl100k_base');

export default function countTokens(input: CountTokensInput): CountTokensOutput {
  // Special-token text in user content is counted as plain text, never as control tokens.
  return input.texts.map((text) => encoding.encode(text, [], []).length);
}
