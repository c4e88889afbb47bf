import { describe, expect, it } from 'vitest';
import { fileObject, UPLOAD_TTL_MS, uploadObject, uploadStatusAt, type UploadMeta } from '../../../../src/core/files/file-objects.js';

const upload: UploadMeta = {
  id: 'upload_1',
  projectId: 'proj_a',
  filename: 'f.jsonl',
  purpose: 'batch',
  bytes: 10,
  mimeType: 'application/jsonl',
  status: 'pending',
  createdAt: 1_000_500,
  expiresAt: 1_000_500 + UPLOAD_TTL_MS,
  fileId: null,
};

describe('file objects', () => {
  it('reads a pending upload as expired from its expiry on, and never changes a finished one', () => {
    expect(uploadStatusAt(upload, upload.expiresAt - 1)).toBe('pending');
    expect(uploadStatusAt(upload, upload.expiresAt)).toBe('expired');
    expect(uploadStatusAt({ ...upload, status: 'cancelled' }, upload.expiresAt + 1)).toBe('cancelled');
  });

  it('renders times in Unix seconds, as the OpenAI shapes have them', () => {
    const file = { id: 'file-1', projectId: 'proj_a', filename: 'f', purpose: 'batch', bytes: 3, createdAt: 2_999 };
    expect(fileObject(file)).toEqual({ id: 'file-1', object: 'file', bytes: 3, created_at: 2, filename: 'f', purpose: 'batch', status: 'processed' });
    expect(uploadObject(upload, 0, file)).toMatchObject({ created_at: 1000, expires_at: 4600, status: 'pending', file: { id: 'file-1' } });
  });
});
