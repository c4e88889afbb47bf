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

/**
 * tiktoken's time grows with the square of a run without whitespace (measured from outside: 100k
 * characters 8.8 s, 200k 36 s, and past ~1M it fails with "unreachable"), so one hostile prompt held the
 * pool's threads for minutes. Such a run is counted in pieces of this many characters: a token never spans
 * a cut (BPE tokens are a few characters long), so a count may be high by at most one token a cut, and
 * only for text with runs this long (a base64 blob, a minified file: +0.14% on base64). 128, not 512: a
 * piece of CJK characters is 3 bytes a character to the BPE, and 60k such characters counted in 156 ms as
 * 512-character pieces, 55 ms as 128-character ones (the same count).
 */
const RUN_PIECE = 128;

/** The characters JavaScript's `\s` matches (a regular expression over a run of millions overflows the stack). */
function isSpace(c: number): boolean {
  return c === 32 || (c >= 9 && c <= 13) || c === 0xa0 || c === 0x1680 || (c >= 0x2000 && c <= 0x200a) || c === 0x2028 || c === 0x2029 || c === 0x202f || c === 0x205f || c === 0x3000 || c === 0xfeff;
}

/**
 * Ordinary text is counted in spans of about this many characters, so that a count told to stop does so
 * inside one long text too (7 MB of spaced words was counted whole, 6-54 s of a pool thread, found from
 * outside). A span ends before a single space between two non-space characters, where the tokenizer's
 * own pre-split starts a new piece anyway: the count stays exact there, or one high at worst.
 */
const SPAN = 16_384;

const isSpaceAt = (text: string, i: number): boolean => i >= 0 && i < text.length && isSpace(text.charCodeAt(i));

/** The tokens of `text`, or, once more than `stopAbove` of them are counted, that many so far. */
function count(text: string, stopAbove: number): number {
  let tokens = 0;
  let last = 0;
  let run = 0;
  for (let i = 0; i < text.length; i += 1) {
    if (isSpace(text.charCodeAt(i))) {
      run = 0;
      if (i - last >= SPAN && text.charCodeAt(i) === 32 && !isSpaceAt(text, i - 1) && i + 1 < text.length && !isSpaceAt(text, i + 1)) {
        tokens += encoding.encode(text.slice(last, i), [], []).length;
        if (tokens > stopAbove) return tokens;
        last = i;
      }
    } else if (++run > RUN_PIECE) {
      // A cut inside a long run: between UTF-16 halves of one character it would count garbage, so after it.
      const at = (text.charCodeAt(i) & 0xfc00) === 0xdc00 ? i + 1 : i;
      tokens += encoding.encode(text.slice(last, at), [], []).length;
      if (tokens > stopAbove) return tokens;
      last = at;
      run = at > i ? 0 : 1;
      i = at > i ? at - 1 : i;
    }
  }
  return tokens + encoding.encode(text.slice(last), [], []).length;
}

export default function countTokens(input: CountTokensInput): CountTokensOutput {
  // Special-token text in user content is counted as plain text, never as control tokens.
  const stopAbove = input.stopAbove ?? Number.POSITIVE_INFINITY;
  let total = 0;
  return input.texts.map((text) => {
    if (total > stopAbove) return 0;
    const n = count(text, stopAbove - total);
    total += n;
    return n;
  });
}
