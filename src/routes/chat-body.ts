/** The body of a chat request, read and validated at the edge (SPEC "Chat completions"; app/chat/chat-completion.ts). */
import type { ChatBody } from '../app/chat/chat-turn.js';
import { chatBodyFrom } from '../app/chat/chat-completion.js';
import { parseJsonBody, type IncomingRequest } from '../http/request.js';

/** Reads and validates the body: 400 before anything else (routing included) looks at it. */
export async function parseChatBody(req: IncomingRequest): Promise<ChatBody> {
  const raw = await req.body();
  return chatBodyFrom(raw, parseJsonBody(raw));
}
