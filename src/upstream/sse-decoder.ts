/**
 * Incremental Server-Sent Events decoder (WHATWG "event stream interpretation", reduced to what model
 * servers send): events end at a blank line; `data:` lines are joined with "\n"; `event:` names the
 * event; comments (":") and other fields are ignored. Handles the three line ends the spec allows (\n,
 * \r\n and a lone \r, mixed in one stream too) and events split across chunks, a CRLF split included.
 */

export interface SseEvent {
  readonly event: string | null;
  readonly data: string;
}

export class SseDecoder {
  #buffer = '';

  /** Feeds a chunk; returns the events it completed. */
  push(chunk: string): SseEvent[] {
    const events: SseEvent[] = [];
    this.#scan(chunk, null, events);
    return events;
  }

  /**
   * Feeds a chunk and hands the data of each event it completed to `onData`, in order, with the event's
   * name (null when it has none: a model's chunks). No event objects, no array and no closure: a streamed
   * chat turn calls this once per upstream read (issue 35).
   */
  pushData(chunk: string, onData: (data: string, event: string | null) => void): void {
    this.#scan(chunk, onData, null);
  }

  /** Each complete event block to `onData` or into `events`; keeps the incomplete rest. */
  #scan(chunk: string, onData: ((data: string, event: string | null) => void) | null, events: SseEvent[] | null): void {
    const buffer = this.#buffer + chunk;
    // Model servers send \n\n; only a stream that contains \r pays for the search that knows CR ends.
    const lineEnds = buffer.includes('\r') ? new LineEnds(buffer) : null;
    let pos = 0;
    for (;;) {
      let index: number;
      let length = 2;
      let oneLine: boolean;
      if (lineEnds !== null) {
        if (!lineEnds.eventEnd(pos)) break;
        ({ index, length, oneLine } = lineEnds);
      } else {
        index = buffer.indexOf('\n\n', pos);
        if (index === -1) break;
        oneLine = buffer.indexOf('\n', pos) === index;
      }
      // The common case, a single `data: ` line: its data is a slice of the read, nothing else is made.
      if (onData !== null && oneLine && buffer.startsWith('data: ', pos)) onData(buffer.slice(pos + 6, index), null);
      else {
        const event = parseBlock(buffer.slice(pos, index));
        if (event !== null) {
          if (events !== null) events.push(event);
          else onData?.(event.data, event.event);
        }
      }
      pos = index + length;
    }
    this.#buffer = pos === 0 ? buffer : buffer.slice(pos);
  }

  /** What is left when the stream ends without a final blank line. */
  flush(): SseEvent[] {
    const rest = this.#buffer;
    this.#buffer = '';
    const event = rest.trim() ? parseBlock(rest) : null;
    return event ? [event] : [];
  }
}

const LF = 10;
const CR = 13;

/**
 * Event ends in a buffer whose lines may end in \n, \r\n or a lone \r (WHATWG SSE allows all three, mixed):
 * an event ends at its first blank line. Walked line by line with the next \n and \r positions kept
 * between calls, so a read of many events is scanned once, not once per event.
 */
class LineEnds {
  readonly #buffer: string;
  #lf = -2;
  #cr = -2;
  /** Set by eventEnd: the block is buffer[from, index); the event's end takes `length` characters after it. */
  index = 0;
  length = 0;
  /** The block is one line (no line end inside it). */
  oneLine = false;

  constructor(buffer: string) {
    this.#buffer = buffer;
  }

  /** The first line end at or after `from`, or -1. */
  #lineEnd(from: number): number {
    const b = this.#buffer;
    if (this.#lf !== -1 && this.#lf < from) this.#lf = b.indexOf('\n', from);
    if (this.#cr !== -1 && this.#cr < from) this.#cr = b.indexOf('\r', from);
    if (this.#lf === -1) return this.#cr;
    return this.#cr === -1 || this.#lf < this.#cr ? this.#lf : this.#cr;
  }

  /**
   * The width of the line end at `at`: a CR followed by an LF is one. A CR that ends the buffer counts
   * alone: should the next read open with its LF, that LF reads as one more blank line, which dispatches
   * nothing (the event it would close is empty), so nothing is held back waiting for it.
   */
  #width(at: number): number {
    return this.#buffer.charCodeAt(at) === CR && this.#buffer.charCodeAt(at + 1) === LF ? 2 : 1;
  }

  /** Finds the end of the event that starts at `from`; false when the buffer holds no blank line yet. */
  eventEnd(from: number): boolean {
    const b = this.#buffer;
    let line = from;
    for (;;) {
      const end = this.#lineEnd(line);
      if (end === -1) return false;
      const next = end + this.#width(end);
      // A blank line first: an empty block, which dispatches nothing.
      if (end === from) return this.#found(from, next - from, true);
      if (next >= b.length) return false;
      const c = b.charCodeAt(next);
      if (c === LF || c === CR) return this.#found(end, next + this.#width(next) - end, line === from);
      line = next;
    }
  }

  #found(index: number, length: number, oneLine: boolean): true {
    this.index = index;
    this.length = length;
    this.oneLine = oneLine;
    return true;
  }
}

/** Any of the three line ends, for the rare block of several lines from a stream with CRs. */
const LINE_END = /\r\n|\r|\n/;

function parseBlock(block: string): SseEvent | null {
  // The common case, a single `data: ` line.
  if (block.startsWith('data: ') && !block.includes('\n') && !block.includes('\r')) return { event: null, data: block.slice(6) };
  let event: string | null = null;
  let data: string | null = null;
  for (const line of block.includes('\r') ? block.split(LINE_END) : block.split('\n')) {
    if (line === '' || line.startsWith(':')) continue;
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'data') data = data === null ? value : `${data}\n${value}`;
    else if (field === 'event') event = value;
  }
  return data === null ? null : { event, data };
}
