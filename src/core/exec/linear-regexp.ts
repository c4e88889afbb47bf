/**
 * The regular-expression engine of tool schemas (issue 31, item 2): every `pattern` and
 * `patternProperties` key of an `input_schema` runs on RE2 (re2js, a pure-JS port), whose matching time
 * is linear in the input. V8's backtracking engine takes exponential time on patterns such as the common
 * host-name one `^([a-z0-9]+\.?)+$` against `"aaa…a!"` (30 characters: seconds), and arguments come from
 * any execution key, and from a model through the `x_exec` bridge.
 *
 * ajv calls the engine at compile time (`code.regExp`), so a pattern RE2 cannot run fails the compile,
 * and the manifest is refused at enrollment with a message naming the pattern (`PatternError`).
 * A pattern must first be a valid ECMA-262 pattern with the `u` flag (what JSON Schema and ajv mean); then
 * it runs with RE2's semantics, which agree with ECMA-262 on the usual syntax (classes, anchors,
 * quantifiers, groups, `\d \w \b`, `\p{L}`). They differ on what RE2 refuses (backreferences, lookahead,
 * lookbehind) and on details: RE2's `\s` is ASCII whitespace, its `.` excludes only `\n`.
 */
import type { CodeOptions } from 'ajv';
import { RE2JS } from 're2js';

type RegExpEngine = NonNullable<CodeOptions['regExp']>;
export interface RegExpLike {
  test(s: string): boolean;
  toString(): string;
}

/** Longest `pattern` (or `patternProperties` key) accepted, in UTF-16 code units. */
export const MAX_PATTERN_LENGTH = 1024;

/** A pattern the engine will not run; the message names it and says why, for the enrollment refusal. */
export class PatternError extends Error {
  override readonly name = 'PatternError';
}

/**
 * A backreference (`\1`..`\9`, `\k<name>`) outside a character class. re2js's ECMA-262 translation turns
 * `\8`, `\9` and `\k` into literals, which would silently change what the pattern means: refused here.
 */
function backreferenceIn(pattern: string): string | null {
  let inClass = false;
  for (let i = 0; i < pattern.length; i++) {
    const ch = pattern[i];
    if (ch === '\\') {
      const next = pattern[i + 1] ?? '';
      if (!inClass && (next === 'k' || (next >= '1' && next <= '9'))) return `\\${next}`;
      i += 1;
    } else if (ch === '[') inClass = true;
    else if (ch === ']') inClass = false;
  }
  return null;
}

const quoted = (pattern: string): string => JSON.stringify(pattern.length > 80 ? `${pattern.slice(0, 80)}…` : pattern);

/** Compiles `pattern` for RE2, or throws PatternError saying what is wrong and what is allowed. */
export function linearRegExp(pattern: string): RegExpLike {
  if (pattern.length > MAX_PATTERN_LENGTH) {
    throw new PatternError(`the pattern ${quoted(pattern)} is ${pattern.length} characters long; at most ${MAX_PATTERN_LENGTH} are allowed`);
  }
  try {
    // Compiling with V8 only checks the syntax (no input is matched: no backtracking).
    new RegExp(pattern, 'u');
  } catch (err) {
    throw new PatternError(`the pattern ${quoted(pattern)} is not a valid regular expression (ECMA-262, u flag): ${(err as Error).message}`);
  }
  const backreference = backreferenceIn(pattern);
  const unsupported = 'patterns run on RE2 (linear time), which has no backreferences, lookahead or lookbehind';
  if (backreference !== null) throw new PatternError(`the pattern ${quoted(pattern)} uses a backreference (${backreference}); ${unsupported}`);
  let re: RE2JS;
  try {
    re = RE2JS.compile(RE2JS.translateRegExp(pattern));
  } catch (err) {
    throw new PatternError(`the pattern ${quoted(pattern)} cannot be run: ${(err as Error).message}; ${unsupported}`);
  }
  // `test`: a match anywhere, as RegExp.prototype.test (JSON Schema patterns are not anchored).
  // `toString`: ajv keys its per-schema pattern cache by it; a plain object's "[object Object]" made every
  // pattern of a schema share the first one (found by the agents' fuzz run).
  return { test: (s: string) => re.test(s), toString: () => `/${pattern}/u` };
}

/**
 * The engine in ajv's shape. ajv passes the flags ("u", the default `unicodeRegExp`): RE2 always matches
 * by code point, which is what "u" asks for. `code` is only used by ajv's standalone output, which we do
 * not generate.
 */
export const linearRegExpEngine: RegExpEngine = Object.assign((pattern: string) => linearRegExp(pattern), { code: 'linearRegExp' });
