/**
 * In-path token compression (X-Service-Compression). Long, repetitive context is what agents send most:
 * logs pasted whole, the same file read three times, tool output with thousands of near-identical lines.
 * Three lossless-in-meaning rewrites of message text, applied only to texts of at least MIN_TEXT_CHARS:
 * 1. a run of identical consecutive lines becomes the line once plus `[previous line repeated N more times]`;
 * 2. a text identical to an earlier message's text becomes `[same content as messages[i]]`;
 * 3. runs of spaces and tabs inside a line (not its indentation, which code needs) shrink to one space,
 *    trailing whitespace goes, and 3+ blank
 *    lines become one;
 * 4. a run of MIN_BLOCK_LINES or more lines that repeats an earlier run of the same text (a stack trace
 *    per failing test, a file printed twice in one output) becomes `[repeats the N lines that start "..." above]`;
 * 5. a text that is one JSON document (pretty-printed tool output) is minified: same JSON value, no layout.
 * The last user message is compressed too (it is often the pasted log), but never replaced by a
 * back-reference: the question being asked stays in the turn. Pure; tokens saved are measured in
 * bench/harness-tokens.ts.
 */
type Json = Record<string, unknown>;

export const MIN_TEXT_CHARS = 1024;
/** Repeats shorter than this are kept: the marker would cost about as much as the lines. */
const MIN_REPEATS = 2;

/** A run of spaces or tabs after a non-blank character: leading indentation is kept. */
const INNER_SPACE = /(\S)[ \t]+/g;

export function compressText(text: string): string {
  const minified = minifiedJson(text);
  if (minified !== null) return minified;
  const lines = text.split('\n');
  const out: string[] = [];
  let blanks = 0;
  for (let i = 0; i < lines.length; ) {
    const line = (lines[i] ?? '').replace(INNER_SPACE, '$1 ').trimEnd();
    let j = i + 1;
    while (j < lines.length && (lines[j] ?? '').replace(INNER_SPACE, '$1 ').trimEnd() === line) j++;
    const repeats = j - i - 1;
    if (line === '') {
      blanks += j - i;
      i = j;
      continue;
    }
    if (blanks > 0) out.push(...(blanks >= 3 ? [''] : new Array<string>(blanks).fill('')));
    blanks = 0;
    if (repeats >= MIN_REPEATS) out.push(line, `[previous line repeated ${repeats} more times]`);
    else for (let k = i; k < j; k++) out.push(line);
    i = j;
  }
  if (blanks > 0) out.push('');
  return dedupeBlocks(out).join('\n');
}

function minifiedJson(text: string): string | null {
  const start = text.trimStart()[0];
  if (start !== '{' && start !== '[') return null;
  try {
    const minified = JSON.stringify(JSON.parse(text));
    return minified.length < text.length ? minified : null;
  } catch {
    return null;
  }
}

const MIN_BLOCK_LINES = 4;

/** Rule 4, LZ77-like over lines: each window of MIN_BLOCK_LINES lines is looked up where it first occurred. */
function dedupeBlocks(lines: readonly string[]): string[] {
  const first = new Map<string, number>();
  const out: string[] = [];
  let i = 0;
  while (i < lines.length) {
    if (i + MIN_BLOCK_LINES <= lines.length) {
      const key = lines.slice(i, i + MIN_BLOCK_LINES).join('\n');
      const j = first.get(key);
      if (j !== undefined && j + MIN_BLOCK_LINES <= i) {
        let n = MIN_BLOCK_LINES;
        while (i + n < lines.length && j + n < i && lines[j + n] === lines[i + n]) n++;
        out.push(`[repeats the ${n} lines that start ${JSON.stringify((lines[j] ?? '').slice(0, 60))} above]`);
        i += n;
        continue;
      }
      if (j === undefined) first.set(key, i);
    }
    out.push(lines[i] ?? '');
    i++;
  }
  return out;
}

/** Compressed messages; null when nothing got shorter. */
export function compressMessages(messages: readonly Json[]): Json[] | null {
  const seen = new Map<string, number>();
  let lastUser = -1;
  messages.forEach((m, i) => {
    if (m.role === 'user') lastUser = i;
  });
  let changed = false;
  const out = messages.map((m, i) => {
    if (typeof m.content === 'string') {
      if (m.content.length < MIN_TEXT_CHARS) return m;
      const earlier = seen.get(m.content);
      if (earlier !== undefined && i !== lastUser) {
        changed = true;
        return { ...m, content: `[same content as messages[${earlier}]]` };
      }
      seen.set(m.content, i);
      const compressed = compressText(m.content);
      if (compressed.length >= m.content.length) return m;
      changed = true;
      return { ...m, content: compressed };
    }
    if (!Array.isArray(m.content)) return m;
    let partChanged = false;
    const parts = (m.content as Json[]).map((p) => {
      if (typeof p.text !== 'string' || p.text.length < MIN_TEXT_CHARS) return p;
      const compressed = compressText(p.text);
      if (compressed.length >= p.text.length) return p;
      partChanged = true;
      return { ...p, text: compressed };
    });
    if (!partChanged) return m;
    changed = true;
    return { ...m, content: parts };
  });
  return changed ? out : null;
}

export function compressBody(body: Json): Json | null {
  if (!Array.isArray(body.messages)) return null;
  const messages = compressMessages(body.messages as Json[]);
  return messages ? { ...body, messages } : null;
}
