/**
 * The error a model server reports inside an answer it sent with HTTP 200: a whole body, or one event of
 * its stream. Servers spell it three ways: OpenAI's `{"error":{...}}`, vLLM's
 * `{"object":"error","message":..,"type":..,"code":400}` (its code is the HTTP status it would have
 * answered with), and the data of an SSE event named `error`, whatever its shape. Such an answer is no
 * answer (SPEC principle 4): the caller maps the report onto a catalogue error (upstream-errors.ts).
 */
type Json = Record<string, unknown>;

/** The report's error object (message, type, code, param as the server sent them), or null: not an error report. */
export function reportedError(value: Json, namedError = false): Json | null {
  const { error } = value;
  if (error !== null && typeof error === 'object' && !Array.isArray(error)) return error as Json;
  if (typeof error === 'string') return { message: error };
  if (value.object === 'error' || namedError || (error !== undefined && error !== null && error !== false)) return value;
  return null;
}
