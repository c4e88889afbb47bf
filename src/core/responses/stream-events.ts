/**
 * Chat completion chunks in, Responses API streaming events out, in the order the SDK expects:
 * response.created, response.in_progress, then per output item output_item.added, (content_part.added,
 * output_text.delta..., output_text.done, content_part.done | function_call_arguments.delta..., .done),
 * output_item.done, and last response.completed (or .incomplete / .failed). Every event carries
 * `sequence_number`, counted from 0.
 */
import type { Item, NewId } from './input-items.js';
import { functionCallItem, logprobEntries, messageItem, responseUsage, statusOf, type ResponseUsage } from './translate.js';

export type ResponseEvent = Record<string, unknown> & { type: string };

interface OpenText {
  readonly kind: 'text';
  readonly index: number;
  readonly id: string;
  text: string;
  /** Token logprobs delivered so far (requested with include: message.output_text.logprobs). */
  logprobs: unknown[];
}

interface OpenCall {
  readonly kind: 'call';
  readonly index: number;
  readonly id: string;
  readonly callId: string;
  name: string;
  args: string;
}

type ItemStatus = 'completed' | 'incomplete';

export interface StreamResult {
  readonly output: Item[];
  readonly usage: ResponseUsage | null;
  readonly status: 'completed' | 'incomplete';
}

export class ResponseStreamTranslator {
  readonly #newId: NewId;
  readonly #namespaces: ReadonlyMap<string, string>;
  #sequence = 0;
  readonly #output: Item[] = [];
  #text: OpenText | null = null;
  /** Open function calls by the chat delta's tool_calls index. */
  readonly #calls = new Map<number, OpenCall>();
  #usage: ResponseUsage | null = null;
  #finishReason: string | null = null;

  constructor(newId: NewId, namespaces: ReadonlyMap<string, string> = new Map()) {
    this.#newId = newId;
    this.#namespaces = namespaces;
  }

  #event(type: string, fields: Record<string, unknown>): ResponseEvent {
    return { type, sequence_number: this.#sequence++, ...fields };
  }

  /**
   * The opening pair, numbered. They carry a Response snapshot, which the caller writes into their frames
   * already serialized (app/responses/responses-reply.ts responseEventFrame), as it does the terminal's.
   */
  start(): [ResponseEvent, ResponseEvent] {
    return [this.#event('response.created', {}), this.#event('response.in_progress', {})];
  }

  /** One chat chunk (already normalized by the chat path). */
  chunk(chunk: Record<string, unknown>): ResponseEvent[] {
    const events: ResponseEvent[] = [];
    if (chunk.usage) this.#usage = responseUsage(chunk.usage);
    const choices = Array.isArray(chunk.choices) ? (chunk.choices as Item[]) : [];
    const choice = choices[0];
    if (!choice) return events;
    const delta = (choice.delta ?? {}) as Item;
    if (typeof delta.content === 'string' && delta.content !== '') events.push(...this.#textDelta(delta.content, logprobEntries(choice)));
    if (Array.isArray(delta.tool_calls)) for (const call of delta.tool_calls as Item[]) events.push(...this.#callDelta(call));
    if (typeof choice.finish_reason === 'string') this.#finishReason = choice.finish_reason;
    return events;
  }

  /**
   * What `chunk` makes of a chunk whose only payload is content text (no logprobs, tool calls, finish
   * reason or usage): the Responses reply's fast path, which reads that text without parsing the chunk.
   */
  text(delta: string): ResponseEvent[] {
    return delta === '' ? [] : this.#textDelta(delta, []);
  }

  /**
   * Appends content text to the open text item and counts its delta event without building it: the
   * sequence number that event carries, or -1 when no text item is open (`text` opens one). The Responses
   * reply's per-chunk fast path writes that event's frame itself (issue 35). `delta` is not empty.
   */
  continueText(delta: string): number {
    const open = this.#text;
    if (open === null) return -1;
    open.text += delta;
    return this.#sequence++;
  }

  /** The open text item (the one `continueText` appends to), or null. */
  get openText(): { readonly id: string; readonly index: number } | null {
    return this.#text;
  }

  #textDelta(delta: string, logprobs: unknown[]): ResponseEvent[] {
    const events: ResponseEvent[] = [];
    if (!this.#text) {
      const id = this.#newId('msg_');
      const index = this.#output.length;
      this.#output.push(messageItem(id, '', 'in_progress'));
      this.#text = { kind: 'text', index, id, text: '', logprobs: [] };
      events.push(this.#event('response.output_item.added', { output_index: index, item: { type: 'message', id, status: 'in_progress', role: 'assistant', content: [] } }));
      events.push(this.#event('response.content_part.added', { item_id: id, output_index: index, content_index: 0, part: { type: 'output_text', text: '', annotations: [], logprobs: [] } }));
    }
    const open = this.#text;
    open.text += delta;
    open.logprobs.push(...logprobs);
    events.push(this.#event('response.output_text.delta', { item_id: open.id, output_index: open.index, content_index: 0, delta, logprobs }));
    return events;
  }

  #callDelta(call: Item): ResponseEvent[] {
    const events: ResponseEvent[] = [];
    const at = typeof call.index === 'number' ? call.index : 0;
    const fn = (call.function ?? {}) as Item;
    let open = this.#calls.get(at);
    if (!open) {
      // The text before a call is finished first: items are closed in the order they were opened.
      events.push(...this.#closeText('completed'));
      const id = this.#newId('fc_');
      open = { kind: 'call', index: this.#output.length, id, callId: typeof call.id === 'string' ? call.id : '', name: typeof fn.name === 'string' ? fn.name : '', args: '' };
      this.#calls.set(at, open);
      const namespace = this.#namespaces.get(open.name);
      this.#output.push(functionCallItem(id, open.callId, open.name, '', 'in_progress', namespace));
      events.push(this.#event('response.output_item.added', { output_index: open.index, item: functionCallItem(id, open.callId, open.name, '', 'in_progress', namespace) }));
    } else if (typeof fn.name === 'string' && open.name === '') {
      open.name = fn.name;
    }
    if (typeof fn.arguments === 'string' && fn.arguments !== '') {
      open.args += fn.arguments;
      events.push(this.#event('response.function_call_arguments.delta', { item_id: open.id, output_index: open.index, delta: fn.arguments }));
    }
    return events;
  }

  #closeText(status: ItemStatus): ResponseEvent[] {
    const open = this.#text;
    if (!open) return [];
    this.#text = null;
    const part = { type: 'output_text', text: open.text, annotations: [], logprobs: open.logprobs };
    const item = messageItem(open.id, open.text, status, open.logprobs);
    this.#output[open.index] = item;
    return [
      this.#event('response.output_text.done', { item_id: open.id, output_index: open.index, content_index: 0, text: open.text, logprobs: open.logprobs }),
      this.#event('response.content_part.done', { item_id: open.id, output_index: open.index, content_index: 0, part }),
      this.#event('response.output_item.done', { output_index: open.index, item }),
    ];
  }

  #closeCalls(status: ItemStatus): ResponseEvent[] {
    const events: ResponseEvent[] = [];
    for (const open of this.#calls.values()) {
      const item = functionCallItem(open.id, open.callId, open.name, open.args, status, this.#namespaces.get(open.name));
      this.#output[open.index] = item;
      events.push(this.#event('response.function_call_arguments.done', { item_id: open.id, output_index: open.index, name: open.name, arguments: open.args }));
      events.push(this.#event('response.output_item.done', { output_index: open.index, item }));
    }
    this.#calls.clear();
    return events;
  }

  /**
   * Closes every open item; the result is what the final Response holds. An item the answer did not
   * finish is `incomplete`, as OpenAI marks it: cut at max_output_tokens, or by a stream that `failed`.
   */
  finish(failed = false): { events: ResponseEvent[]; result: StreamResult } {
    const status = statusOf(this.#finishReason);
    const itemStatus = failed ? 'incomplete' : status;
    const events = [...this.#closeText(itemStatus), ...this.#closeCalls(itemStatus)];
    return { events, result: { output: this.#output, usage: this.#usage, status } };
  }

  /** The items so far (a failed stream's Response keeps what was delivered). */
  get output(): Item[] {
    return this.#output;
  }

  get usage(): ResponseUsage | null {
    return this.#usage;
  }

  /** The terminal event, numbered; the caller writes the final Response into its frame (see start). */
  terminal(type: 'response.completed' | 'response.incomplete' | 'response.failed'): ResponseEvent {
    return this.#event(type, {});
  }
}
