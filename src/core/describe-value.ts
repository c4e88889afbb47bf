/**
 * How an error message names a value the client sent. Used by the wire schemas (schemas/issues.ts) and by the domain rules that refuse a value
 * (core/responses/chat-refusal.ts). Pure.
 */
const MAX_ECHO = 40;

/** Short enough to never echo a whole prompt or image back into an error message. */
export function describe(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (value === null) return 'null';
  if (typeof value === 'string') {
    return value.length > MAX_ECHO ? `${JSON.stringify(value.slice(0, MAX_ECHO))}... (${value.length} characters)` : JSON.stringify(value);
  }
  if (Array.isArray(value)) return `an array of ${value.length} item${value.length === 1 ? '' : 's'}`;
  if (typeof value === 'object') return 'an object';
  return String(value);
}
