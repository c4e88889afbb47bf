/**
 * Bytes gathered for one write in a buffer that is kept and reused, grown when a write needs more. A
 * streamed chat turn assembles its frames here from slices of the model server's reads and from bytes
 * encoded once, so a chunk on the fast path makes no string (issue 35: uWS encodes every string it is
 * handed to UTF-8 again, and the strings were the garbage a chunk left). At the top of src/ beside
 * byte-cache.ts: the domain (core/chat/chunk-restamp.ts) fills it and the app layer writes it.
 */
export class ByteBuilder {
  #buf: Buffer;
  /** Bytes gathered since the last take(). */
  length = 0;

  constructor(capacity = 1024) {
    this.#buf = Buffer.allocUnsafe(capacity);
  }

  get capacity(): number {
    return this.#buf.length;
  }

  /** Appends bytes held as they are (a cached frame head). */
  bytes(bytes: Uint8Array): void {
    this.#reserve(bytes.length);
    this.#buf.set(bytes, this.length);
    this.length += bytes.length;
  }

  /** Appends `source[start, end)`. */
  slice(source: Buffer, start: number, end: number): void {
    this.#reserve(end - start);
    source.copy(this.#buf, this.length, start, end);
    this.length += end - start;
  }

  /** Appends a string as UTF-8. */
  text(text: string): void {
    // A UTF-16 code unit takes at most 3 bytes in UTF-8 (a surrogate pair, two units, takes 4).
    this.#reserve(text.length * 3);
    this.length += this.#buf.write(text, this.length);
  }

  /**
   * What was gathered, and the builder emptied. The view shares the reused buffer: it is valid until the
   * next append, so its reader copies what it keeps (uWS copies what it cannot send at once).
   */
  take(): Buffer {
    const out = this.#buf.subarray(0, this.length);
    this.length = 0;
    return out;
  }

  #reserve(more: number): void {
    const need = this.length + more;
    if (need <= this.#buf.length) return;
    const next = Buffer.allocUnsafe(Math.max(need, this.#buf.length * 2));
    this.#buf.copy(next, 0, 0, this.length);
    this.#buf = next;
  }
}

/** Builders not in use. A builder that grew past SPARE_MAX_BYTES (one huge read) is left to the collector. */
const spares: ByteBuilder[] = [];
const SPARES_MAX = 256;
const SPARE_MAX_BYTES = 64 * 1024;

/** A builder for bytes that wait a moment (one per streamed turn with bytes not yet written). */
export function borrowBuilder(): ByteBuilder {
  return spares.pop() ?? new ByteBuilder();
}

/** Gives a builder back once what it gathered was written; nothing taken from it may be used after. */
export function returnBuilder(builder: ByteBuilder): void {
  builder.length = 0;
  if (spares.length < SPARES_MAX && builder.capacity <= SPARE_MAX_BYTES) spares.push(builder);
}
