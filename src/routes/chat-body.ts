/** The body of a chat request, read and validated at the edge (SPEC "Chat completions"). */
import type { ChatBody } from '../app/chat/chat-turn.js';
import { GatewayError } from '../errors.js';
import { parseJsonBody, type IncomingRequest } from '../http/request.js';
import { parseChatRequest } from '../schemas/chat-request.js';

/** Reads and validates the body: 400 before anything else (routing included) looks at it. */
export async function parseChatBody(req: IncomingRequest): Promise<ChatBody> {
  const raw = await req.body();
  const parsed = parseJsonBody(raw);
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw new GatewayError('invalid_request', { message: 'The request body must be a JSON object.' });
  }
  const body = parsed as Record<string, unknown>;
  return { raw, parsed: body, chat: parseChatRequest(body) };
}
