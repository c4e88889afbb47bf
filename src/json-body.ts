/**
 * A request body read as JSON, with the refusals every JSON route shares (empty, too deep, compressed,
 * not JSON). Pure: http/request.ts applies it to a request's body, and the wire schemas that answer a bad
 * body with a code of their own call it first.
 */
import { GatewayError } from './errors.js';
import { MAX_JSON_DEPTH, nestsDeeperThan } from './json-depth.js';

/** A request body as JSON; 400 invalid_json when it is not. */
export function parseJsonBody(buf: Buffer): unknown {
  if (buf.length === 0) throw new GatewayError('invalid_json', { message: 'The request body is empty; send a JSON object.' });
  if (nestsDeeperThan(buf)) {
    throw new GatewayError('invalid_json', { message: `The request body nests arrays or objects more than ${MAX_JSON_DEPTH} levels deep; flatten it.` });
  }
  // A client that compressed its body (Content-Encoding: gzip) would otherwise read binary in the message.
  if (buf[0] === 0x1f && buf[1] === 0x8b) {
    throw new GatewayError('invalid_json', { message: 'The request body is gzip-compressed; request bodies are read as sent (Content-Encoding is not supported): send the JSON uncompressed.' });
  }
  try {
    return JSON.parse(buf.toString('utf8'));
  } catch (err) {
    // V8 quotes the start of the body in its message: control characters are escaped so the message stays text.
    throw new GatewayError('invalid_json', { message: `The request body is not valid JSON: ${printable((err as Error).message)}` });
  }
}

function printable(text: string): string {
  return text.replace(/[\u0000-\u001f\u007f-\u009f\ufffd]/g, (c) => (c === '\ufffd' ? '?' : `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`));
}
