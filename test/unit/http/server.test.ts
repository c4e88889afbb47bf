/**
 * The HTTP server's own guarantees, in process: nothing a handler throws goes unseen. Regression: any
 * exception that was not a GatewayError became a bare 500 with no log line.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHttpServer, notFoundMessage, type HttpServer } from '../../../src/http/server.js';
import { loadUws } from '../../../src/http/uws.js';

const seen: { err: unknown; where: string; requestId: string | undefined }[] = [];
let server: HttpServer;
let base = '';

beforeAll(async () => {
  server = createHttpServer({
    uws: loadUws().uws,
    routes: [
      {
        method: 'GET',
        pattern: '/boom',
        family: 'test',
        auth: { kind: 'public' },
        handle() {
          throw new TypeError('a bug in a handler');
        },
      },
    ],
    maxBodyBytes: 1024,
    production: false,
    trustProxy: false,
    onComplete: () => undefined,
    onUnexpectedError: (err, where, req) => seen.push({ err, where, requestId: req?.requestId }),
  });
  const port = await server.listen('127.0.0.1', 0);
  base = `http://127.0.0.1:${port}`;
});

afterAll(async () => {
  await server.drain(100);
});

describe('createHttpServer', () => {
  it('reports a handler exception once, with its request id, before answering 500 internal_error without its details', async () => {
    const res = await fetch(`${base}/boom`);
    expect(res.status).toBe(500);
    const body = (await res.json()) as { error: { code: string; message: string } };
    expect(body.error.code).toBe('internal_error');
    expect(body.error.message).not.toContain('a bug');
    expect(seen).toHaveLength(1);
    expect(seen[0]?.where).toBe('handler');
    expect((seen[0]?.err as Error).message).toBe('a bug in a handler');
    expect(seen[0]?.requestId).toBe(res.headers.get('x-request-id'));
  });

  it('refuses to listen on a port another server already holds', async () => {
    const port = Number(new URL(base).port);
    const second = createHttpServer({ uws: loadUws().uws, routes: [], maxBodyBytes: 1024, production: false, trustProxy: false, onComplete: () => undefined, onUnexpectedError: () => undefined });
    await expect(second.listen('127.0.0.1', port)).rejects.toThrow(/address in use/);
  });
});

describe('notFoundMessage', () => {
  it('says a path lacks its /v1 segment and what API paths look like', () => {
    const message = notFoundMessage('POST', '/proj_a/chat/chat/completions');
    expect(message).toContain('no /v1 segment');
    expect(message).toContain('/{project_id}/{endpoint_slug}/v1/chat/completions');
    expect(notFoundMessage('GET', '/proj_a/v1/nothing')).not.toContain('no /v1 segment');
  });
});
