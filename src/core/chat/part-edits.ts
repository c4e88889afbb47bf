/**
 * Content parts the gateway replaces before the model sees a turn (SPEC "Message object": image URLs are
 * inlined as data: URLs, input_audio parts become the text of their transcript). Only the `messages`
 * value is re-serialized, with only those parts changed: every other byte of the body stays the
 * client's. Pure.
 */
import { spliceTopLevel } from '../json-splice.js';

type Json = Record<string, unknown>;

export interface PartEdit {
  readonly message: number;
  readonly part: number;
  /** The whole replacement part. */
  readonly value: Json;
}

export interface EditedBody {
  /** The bytes to build the upstream body from: the client's own when nothing was edited. */
  readonly raw: Buffer;
  /** The same body, parsed (the fallback of later byte edits). */
  readonly parsed: Json;
}

/** `messages[i].content[j]`, the SPEC path of a part, as errors name it. */
export const partPath = (message: number, part: number): string => `messages[${message}].content[${part}]`;

export function applyPartEdits(raw: Buffer, parsed: Json, edits: readonly PartEdit[]): EditedBody {
  if (edits.length === 0) return { raw, parsed };
  // Copies only the messages and content arrays that change: parts can hold megabytes of base64.
  const messages = [...(parsed.messages as Json[])];
  for (const edit of edits) {
    const message = messages[edit.message] as Json;
    const content = [...(message.content as Json[])];
    content[edit.part] = edit.value;
    messages[edit.message] = { ...message, content };
  }
  const next: Json = { ...parsed, messages };
  const spliced = spliceTopLevel(raw, new Map([['messages', JSON.stringify(messages)]]));
  return { raw: spliced ?? Buffer.from(JSON.stringify(next)), parsed: next };
}
