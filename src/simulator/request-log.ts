// In-memory ring buffer of received requests. Tests read it through
// GET /__sim/requests to prove what actually reached the upstream: the raw
// body bytes the gateway forwarded, its headers, and whether a client abort
// propagated (aborted: true).

export interface RequestLogEntry {
  seq: number;
  method: string;
  path: string;
  /** Lowercased names; authorization included on purpose (tests check forwarding). */
  headers: Record<string, string>;
  /** Exactly the body text as received, before any parsing. */
  body: string;
  received_at: string;
  /** The client went away before the response finished. */
  aborted: boolean;
  /** When the gateway closed the connection (Unix ms): how fast a client's abort reached the upstream. */
  aborted_at_ms: number | null;
  /** The response was fully written (false for fail-after closes and aborts). */
  completed: boolean;
  /** Status sent, or null if none was (aborted before headers, fail-after). */
  status: number | null;
}

export const DEFAULT_LOG_CAPACITY = 200;

export class RequestLog {
  private readonly slots: (RequestLogEntry | undefined)[];
  private next = 0;
  private size = 0;
  private seq = 0;

  constructor(readonly capacity: number = DEFAULT_LOG_CAPACITY) {
    this.slots = new Array<RequestLogEntry | undefined>(capacity);
  }

  record(method: string, path: string, headers: Record<string, string>): RequestLogEntry {
    const entry: RequestLogEntry = {
      seq: ++this.seq,
      method,
      path,
      headers,
      body: '',
      received_at: new Date().toISOString(),
      aborted: false,
      aborted_at_ms: null,
      completed: false,
      status: null,
    };
    this.slots[this.next] = entry;
    this.next = (this.next + 1) % this.capacity;
    if (this.size < this.capacity) this.size++;
    return entry;
  }

  /** Newest first. */
  recent(limit: number): RequestLogEntry[] {
    const count = Math.min(Math.max(0, limit), this.size);
    const out: RequestLogEntry[] = [];
    for (let i = 1; i <= count; i++) {
      const entry = this.slots[(this.next - i + this.capacity) % this.capacity];
      if (entry) out.push(entry);
    }
    return out;
  }

  /** Sequence numbers keep increasing across clears so stale reads are detectable. */
  clear(): void {
    this.slots.fill(undefined);
    this.next = 0;
    this.size = 0;
  }
}
