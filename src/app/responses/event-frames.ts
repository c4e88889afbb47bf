/**
 * The SSE frames of Responses streaming events. JSON.stringify of one small event costs 1-2.6 us on
 * this VM (Node 20), and a streamed turn sends ~25 of them: the events every message turn sends are
 * written out here by hand, as the bytes JSON.stringify makes of the objects core/responses/stream-events.ts
 * builds (members in the order it writes them; a test holds every writer equal to JSON.stringify). Any
 * other event, or one whose members are not the shape a writer expects, goes through JSON.stringify.
 */
import type { ResponseEvent } from '../../core/responses/stream-events.js';

type Fields = Record<string, unknown>;

export function frame(event: ResponseEvent): string {
  const data = handWritten(event) ?? JSON.stringify(event);
  return `event: ${event.type}\ndata: ${data}\n\n`;
}

/**
 * An event whose only member besides type and sequence number is `response`, with that Response already
 * serialized: the bytes `frame` makes of it (a test holds the two equal).
 */
export function responseEventFrame(event: ResponseEvent, responseJson: string): string {
  return `event: ${event.type}\ndata: {"type":${JSON.stringify(event.type)},"sequence_number":${integer(event.sequence_number)},"response":${responseJson}}\n\n`;
}

/** The members of a delta event that name its item, up to `"delta":`: the same for every delta of an item. */
export function deltaItemPart(itemId: unknown, outputIndex: unknown, contentIndex: unknown): string {
  return `,"item_id":${JSON.stringify(itemId)},"output_index":${integer(outputIndex)},"content_index":${integer(contentIndex)},"delta":`;
}

/** The output_text.delta frame from its parts, already JSON: the event a streamed turn sends once per chunk. */
export function textDeltaFrame(sequence: string | number, itemPart: string, deltaJson: string, logprobsJson: string): string {
  return `event: response.output_text.delta\ndata: ${textDeltaData(sequence, itemPart, deltaJson, logprobsJson)}\n\n`;
}

function textDeltaData(sequence: string | number, itemPart: string, deltaJson: string, logprobsJson: string): string {
  return `{"type":"response.output_text.delta","sequence_number":${sequence}${itemPart}${deltaJson},"logprobs":${logprobsJson}}`;
}

function handWritten(e: ResponseEvent): string | null {
  if (!Number.isInteger(e.sequence_number) || !Number.isInteger(e.output_index)) return null;
  switch (e.type) {
    case 'response.output_text.delta': {
      const logprobs = list(e.logprobs);
      return typeof e.delta !== 'string' || logprobs === null || !ofPart(e) ? null : textDeltaData(e.sequence_number as number, deltaItemPart(e.item_id, e.output_index, e.content_index), JSON.stringify(e.delta), logprobs);
    }
    case 'response.output_text.done': {
      const logprobs = list(e.logprobs);
      return typeof e.text !== 'string' || logprobs === null || !ofPart(e) ? null : `${partHead(e)},"text":${JSON.stringify(e.text)},"logprobs":${logprobs}}`;
    }
    case 'response.content_part.added':
    case 'response.content_part.done': {
      const part = textPart(e.part);
      return part === null || !ofPart(e) ? null : `${partHead(e)},"part":${part}}`;
    }
    case 'response.output_item.added':
    case 'response.output_item.done': {
      const item = message(e.item);
      return item === null ? null : `{"type":"${e.type}","sequence_number":${e.sequence_number},"output_index":${e.output_index},"item":${item}}`;
    }
    default:
      return null;
  }
}

/** The event names a content part: a string item id and an integer content index. */
const ofPart = (e: ResponseEvent): boolean => typeof e.item_id === 'string' && Number.isInteger(e.content_index);

/** `{"type":…,"sequence_number":…,"item_id":…,"output_index":…,"content_index":…` of an event of a content part. */
function partHead(e: ResponseEvent): string {
  return `{"type":"${e.type}","sequence_number":${e.sequence_number as number},"item_id":${JSON.stringify(e.item_id)},"output_index":${e.output_index as number},"content_index":${e.content_index as number}`;
}

/** An output_text part as messageItem (core/responses/translate.ts) makes it, or null for any other. */
function textPart(value: unknown): string | null {
  const p = value as Fields | null;
  if (p === null || typeof p !== 'object' || p.type !== 'output_text' || typeof p.text !== 'string' || !isEmptyList(p.annotations)) return null;
  const logprobs = list(p.logprobs);
  return logprobs === null || Object.keys(p).length !== 4 ? null : `{"type":"output_text","text":${JSON.stringify(p.text)},"annotations":[],"logprobs":${logprobs}}`;
}

/** An assistant message item with output_text parts, or null for any other item. */
function message(value: unknown): string | null {
  const m = value as Fields | null;
  if (m === null || typeof m !== 'object' || m.type !== 'message' || m.role !== 'assistant' || typeof m.id !== 'string' || typeof m.status !== 'string' || !Array.isArray(m.content)) return null;
  if (Object.keys(m).length !== 5) return null;
  let content = '';
  for (const part of m.content as unknown[]) {
    const json = textPart(part);
    if (json === null) return null;
    content += content === '' ? json : `,${json}`;
  }
  return `{"type":"message","id":${JSON.stringify(m.id)},"status":${JSON.stringify(m.status)},"role":"assistant","content":[${content}]}`;
}

const isEmptyList = (v: unknown): boolean => Array.isArray(v) && v.length === 0;

/** A list member, mostly empty (logprobs not asked for); null when it is not a list. */
const list = (v: unknown): string | null => (isEmptyList(v) ? '[]' : Array.isArray(v) ? JSON.stringify(v) : null);

/** JSON of a value that is an integer on this path; anything else as JSON.stringify writes it. */
const integer = (v: unknown): string => (Number.isInteger(v) ? String(v) : JSON.stringify(v));
