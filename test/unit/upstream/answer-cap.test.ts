import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { GatewayError } from '../../../src/errors.js';
import { errorText, MAX_ERROR_BYTES, readCapped } from '../../../src/upstream/answer-cap.js';

const chunks = (n: number, size: number): Readable => Readable.from(Array.from({ length: n }, () => Buffer.alloc(size, 0x61)));

describe('answer caps', () => {
  it('reads a body whole up to its cap', async () => {
    expect((await readCapped(chunks(4, 1000), 4000)).length).toBe(4000);
  });

  it('stops reading past the cap and fails the turn with a message saying why', async () => {
    const body = chunks(10, 1000);
    const err = await readCapped(body, 4500).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(GatewayError);
    expect((err as GatewayError).code).toBe('internal_error');
    expect((err as GatewayError).message).toContain('exceeded 4500 bytes');
    expect(body.destroyed).toBe(true);
  });

  it('keeps at most 64 KiB of an error answer, for its message', async () => {
    expect((await errorText(chunks(100, 4096))).length).toBe(MAX_ERROR_BYTES);
    expect(await errorText(Readable.from([Buffer.from('{"error":"x"}')]))).toBe('{"error":"x"}');
  });
});
