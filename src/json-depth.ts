/**
 * How deeply a JSON text nests, checked before it is parsed. JSON.parse itself copes with any depth, but
 * the code that walks a request afterwards (token estimates, the router's affinity key, re-serializing
 * the upstream body) recurses, and past about 4,000 levels it ran out of stack: a 500 any client could
 * provoke. No real request comes near the limit (tool schemas nest tens of levels).
 */
export const MAX_JSON_DEPTH = 512;

const OPEN_OBJECT = 0x7b; // {
const OPEN_ARRAY = 0x5b; // [
const CLOSE_OBJECT = 0x7d;
const CLOSE_ARRAY = 0x5d;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/**
 * Whether `buf` opens more than `limit` nested arrays or objects at once. Most bodies are decided by
 * counting brackets with the native indexOf (nesting can never exceed the number of openers); only a
 * body with more openers than the limit is walked byte by byte, strings skipped.
 */
export function nestsDeeperThan(buf: Buffer, limit = MAX_JSON_DEPTH): boolean {
  if (buf.length <= limit) return false;
  if (countByte(buf, OPEN_OBJECT, limit) + countByte(buf, OPEN_ARRAY, limit) <= limit) return false;
  let depth = 0;
  let inString = false;
  for (let i = 0; i < buf.length; i++) {
    const b = buf[i];
    if (inString) {
      if (b === BACKSLASH) i++;
      else if (b === QUOTE) inString = false;
    } else if (b === QUOTE) inString = true;
    else if (b === OPEN_OBJECT || b === OPEN_ARRAY) {
      if (++depth > limit) return true;
    } else if (b === CLOSE_OBJECT || b === CLOSE_ARRAY) depth--;
  }
  return false;
}

/** Occurrences of `byte` in `buf`, counting no further than `stopAfter`. */
function countByte(buf: Buffer, byte: number, stopAfter: number): number {
  let n = 0;
  for (let at = buf.indexOf(byte); at !== -1 && n <= stopAfter; at = buf.indexOf(byte, at + 1)) n++;
  return n;
}
