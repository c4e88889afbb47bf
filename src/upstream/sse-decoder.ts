/**
 * Incremental Server-Sent Events decoder (WHATWG "event stream interpretation", reduced to what model
 * servers send): events end at a blank line; `data:` lines are joined with "\n"; `event:` names the
 * event; comments (":") and other fields are ignored. Handles \n, \r\n and events split across chunks.
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
    // Model servers send \n\n; only a stream that contains \r pays for the CRLF search.
    const crlf = buffer.includes('\r');
    let pos = 0;
    for (;;) {
      let index: number;
      let length = 2;
      if (crlf) {
        const end = findEventEnd(buffer, pos);
        if (end === null) break;
        ({ index, length } = end);
      } else {
        index = buffer.indexOf('\n\n', pos);
        if (index === -1) break;
      }
      // The common case, a single `data: ` line: its data is a slice of the read, nothing else is made.
      if (onData !== null && buffer.startsWith('data: ', pos) && buffer.indexOf('\n', pos) === index) onData(buffer.slice(pos + 6, index), null);
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

function findEventEnd(buffer: string, from: number): { index: number; length: number } | null {
  const lf = buffer.indexOf('\n\n', from);
  const crlf = buffer.indexOf('\r\n\r\n', from);
  if (lf === -1 && crlf === -1) return null;
  if (crlf !== -1 && (lf === -1 || crlf < lf)) return { index: crlf, length: 4 };
  return { index: lf, length: 2 };
}

function parseBlock(block: string): SseEvent | null {
  // The common case, a single `data: ` line.
  if (block.startsWith('data: ') && !block.includes('\n')) return { event: null, data: block.slice(6) };
  let event: string | null = null;
  let data: string | null = null;
  for (const raw of block.split('\n')) {
    const line = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
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
