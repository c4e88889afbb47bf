/**
 * Request ids. Random bytes are drawn from the CSPRNG in 4 KiB batches: one syscall serves ~340 ids,
 * which keeps id minting off the per-request profile.
 */
import { randomBytes } from 'node:crypto';

const BATCH = 4096;
const ID_BYTES = 12;
let pool = randomBytes(BATCH);
let offset = 0;

function nextRandomHex(): string {
  if (offset + ID_BYTES > BATCH) {
    pool = randomBytes(BATCH);
    offset = 0;
  }
  const hex = pool.toString('hex', offset, offset + ID_BYTES);
  offset += ID_BYTES;
  return hex;
}

/** `chatcmpl-<24 hex>` for chat completions (the convention clients expect), `req_<24 hex>` elsewhere. */
export function newRequestId(prefix: string): string {
  return prefix + nextRandomHex();
}
