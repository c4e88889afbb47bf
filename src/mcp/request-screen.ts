/**
 * What the MCP route checks in a POST's JSON-RPC messages before the SDK's transport sees them (docs/mcp.md
 * "Batches and rate limits", "Results and errors"):
 *
 * - **One unit per request.** On protocol 2025-03-26 a POST may carry a batch; the HTTP request was
 *   admitted as one unit (routes/guard.ts), which pays for its first JSON-RPC request. Every further
 *   request takes a unit of its own, as a request sent alone would. A request past the allowance is
 *   answered here with a JSON-RPC error carrying the 429 envelope and is never run; admission stops at the
 *   first refusal (the window does not move within one POST), so nothing past it is charged.
 * - **Readable params.** The SDK parses a request with its own zod schema before any handler runs and
 *   answers a failure with -32603 (Internal error) and zod's raw issue list. Each `tools/call`,
 *   `tools/list` and `ping` is checked here against the same schema and a failure is answered -32602
 *   (Invalid params) naming the param, the way every other refusal of the gateway reads (schemas/issues.ts).
 *
 * What passes is handed to the SDK unchanged, in order; notifications and responses are never charged.
 */
import { MAX_BATCH_SIZE } from '@modelcontextprotocol/sdk/server/requestBody.js';
import { CallToolRequestSchema, ErrorCode, ListToolsRequestSchema, PingRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { GatewayError } from '../errors.js';
import { issueToGatewayError } from '../schemas/issues.js';
import { safeParseCut } from '../schemas/long-arrays.js';

/** JSON-RPC's implementation-defined server error range: the refusal's envelope (in `data`) says which. */
export const RATE_LIMITED = -32000;

export interface JsonRpcErrorResponse {
  readonly jsonrpc: '2.0';
  readonly id: string | number;
  readonly error: { readonly code: number; readonly message: string; readonly data: Record<string, unknown> };
}

export interface Screened {
  /** The body for the SDK: the messages that passed, an array when the body was one. */
  readonly forward: unknown;
  /** The answers to the requests that did not pass, in their order. */
  readonly answered: readonly JsonRpcErrorResponse[];
}

/** One more unit of the key's class: null when admitted, the 429 refusal otherwise. */
export type AdmitOne = () => Promise<GatewayError | null>;

interface JsonRpcRequest {
  readonly id: string | number;
  readonly method: string;
  readonly params?: unknown;
}

/** A request (not a notification or a response): what the SDK would answer, so what a unit pays for. */
function asRequest(m: unknown): JsonRpcRequest | null {
  if (typeof m !== 'object' || m === null || Array.isArray(m)) return null;
  const { id, method } = m as Record<string, unknown>;
  if (typeof method !== 'string') return null;
  if (typeof id !== 'string' && !(typeof id === 'number' && Number.isInteger(id))) return null;
  return m as JsonRpcRequest;
}

/**
 * The SDK's own schemas of the requests this server handles (mcp-server.ts; `ping` is the SDK's): whatever
 * passes here passes the SDK's parse. Zod's default objects keep `jsonrpc` and `id` out of the check.
 */
const REQUEST_SCHEMAS: ReadonlyMap<string, z.ZodType> = new Map<string, z.ZodType>([
  ['tools/call', CallToolRequestSchema],
  ['tools/list', ListToolsRequestSchema],
  ['ping', PingRequestSchema],
]);

/** The readable refusal of a request whose params fail MCP's schema (path `params.name`...); null when they pass. */
export function paramsError(request: { readonly method: string; readonly params?: unknown }): GatewayError | null {
  const schema = REQUEST_SCHEMAS.get(request.method);
  if (!schema) return null;
  const result = safeParseCut(schema, request);
  if (result.success) return null;
  const e = issueToGatewayError(result.error.issues, request);
  return new GatewayError('invalid_body', { param: e.param, message: e.message });
}

const answer = (id: string | number, code: number, e: GatewayError): JsonRpcErrorResponse => ({
  jsonrpc: '2.0',
  id,
  error: { code, message: code === ErrorCode.InvalidParams ? `Invalid params: ${e.message}` : e.message, data: e.toEnvelope() },
});

export async function screenMessages(body: unknown, admitOne: AdmitOne): Promise<Screened> {
  // A batch the SDK refuses whole (400, "Batch must not exceed 100 messages") is passed on unscreened: it
  // charged a unit a request before the refusal (2,000 pings emptied the project's minute for every key)
  // and checked each one's params (150,000 took the event loop 5 s).
  if (Array.isArray(body) && body.length > MAX_BATCH_SIZE) return { forward: body, answered: [] };
  const messages: readonly unknown[] = Array.isArray(body) ? body : [body];
  const forward: unknown[] = [];
  const answered: JsonRpcErrorResponse[] = [];
  let requests = 0;
  let refusal: GatewayError | null = null;
  for (const m of messages) {
    const request = asRequest(m);
    if (request === null) {
      forward.push(m);
      continue;
    }
    requests += 1;
    // The first request rode on the HTTP request's own unit.
    if (requests > 1 && refusal === null) refusal = await admitOne();
    const refused = refusal ?? paramsError(request);
    if (refused) answered.push(answer(request.id, refused === refusal ? RATE_LIMITED : ErrorCode.InvalidParams, refused));
    else forward.push(m);
  }
  return { forward: Array.isArray(body) || forward.length === 0 ? forward : forward[0], answered };
}

/** The ids (as JSON text) of the requests among `messages` (one message or a batch), in order. */
export function requestIdsOf(messages: unknown): string[] {
  const all: readonly unknown[] = Array.isArray(messages) ? messages : [messages];
  return all.flatMap((m) => {
    const request = asRequest(m);
    return request === null ? [] : [JSON.stringify(request.id)];
  });
}

/** The answers as SSE `message` events, the form the SDK's own answers to a POST take. */
export function sseEvents(answered: readonly JsonRpcErrorResponse[]): string {
  return answered.map((a) => `event: message\ndata: ${JSON.stringify(a)}\n\n`).join('');
}
