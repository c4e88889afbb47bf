/**
 * Fixed strings needed as bytes over and over (header names and status lines, JSON keys to match): each
 * is encoded to UTF-8 once. Bounded all the same, so a caller handed varying strings cannot grow it: past
 * the bound a string is encoded afresh on every call. At the top of src/ because both the domain
 * (core/json-splice.ts) and the uWS layer (http/reply.ts) use it, and neither may import the other.
 */
export function byteCache(max: number): (text: string) => Buffer {
  const cache = new Map<string, Buffer>();
  return (text) => {
    let bytes = cache.get(text);
    if (!bytes) {
      bytes = Buffer.from(text);
      if (cache.size < max) cache.set(text, bytes);
    }
    return bytes;
  };
}
