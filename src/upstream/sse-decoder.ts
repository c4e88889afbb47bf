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
    this.#buffer += chunk;
    const events: SseEvent[] = [];
    for (;;) {
      const end = findEventEnd(this.#buffer);
      if (end === null) break;
      const block = this.#buffer.slice(0, end.index);
      this.#buffer = this.#buffer.slice(end.index + end.length);
      const event = parseBlock(block);
      if (event) events.push(event);
    }
    return events;
  }

  /** What is left when the stream ends without a final blank line. */
  flush(): SseEvent[] {
    const rest = this.#buffer;
    this.#buffer = '';
    const event = rest.trim() ? parseBlock(rest) : null;
    return event ? [event] : [];
  }
}

function findEventEnd(buffer: string): { index: number; length: number } | null {
  const lf = buffer.indexOf('\n\n');
  const crlf = buffer.indexOf('\r\n\r\n');
  if (lf === -1 && crlf === -1) return null;
  if (crlf !== -1 && (lf === -1 || crlf < lf)) return { index: crlf, length: 4 };
  return { index: lf, length: 2 };
}

function parseBlock(block: string): SseEvent | null {
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
