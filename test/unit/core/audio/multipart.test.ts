import { describe, expect, it } from 'vitest';
import { multipartBody } from '../../../../src/core/audio/multipart.js';
import { boundaryOf, parseMultipart } from '../../../../src/simulator/multipart.js';

describe('multipartBody', () => {
  it('writes the fields in order, then the file with its bytes intact', () => {
    const data = Buffer.from([0, 1, 2, 0x0d, 0x0a, 0x2d, 0x2d, 255]);
    const { body, contentType } = multipartBody('b-123', [['model', 'whisper'], ['response_format', 'json']], { name: 'file', filename: 'audio.wav', contentType: 'audio/wav', data });
    expect(contentType).toBe('multipart/form-data; boundary=b-123');
    const parts = parseMultipart(body, boundaryOf(contentType));
    expect(parts.map((p) => [p.name, p.filename])).toEqual([['model', null], ['response_format', null], ['file', 'audio.wav']]);
    expect(parts[0]?.data.toString()).toBe('whisper');
    expect(parts[2]?.contentType).toBe('audio/wav');
    expect(parts[2]?.data.equals(data)).toBe(true);
  });
});
