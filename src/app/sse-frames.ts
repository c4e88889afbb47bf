/**
 * The frames SPEC "Streaming events" ends an SSE stream with, shared by every route that streams: a
 * mid-stream error is a `data:` frame with the error envelope followed by `[DONE]`; a timeout is an event
 * named `error` (type timeout_error) and no `[DONE]`, since the stream did not complete.
 */
import type { GatewayError } from '../errors.js';

export const DONE_FRAME = 'data: [DONE]\n\n';

export function errorFrame(e: GatewayError): string {
  return `data: ${JSON.stringify(e.toEnvelope())}\n\n`;
}

export function timeoutEvent(message: string): string {
  return `event: error\ndata: ${JSON.stringify({ error: { message, type: 'timeout_error', code: 'timeout', param: null } })}\n\n`;
}
