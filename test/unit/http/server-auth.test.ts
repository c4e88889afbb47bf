/**
 * The authentication step of the server (issue 12): a route's declared authenticator runs after the route
 * checks and before the handler, its result is the handler's second argument, a refusal never reaches the
 * handler, and an asynchronous authenticator (a shared admission) is awaited while a synchronous one adds
 * no await. The real listener, over HTTP.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GatewayError } from '../../../src/errors.js';
import { createHttpServer, serveRoute, type HttpServer, type RouteContext, type RouteDef } from '../../../src/http/server.js';
import { loadUws } from '../../../src/http/uws.js';

const steps: string[] = [];
let server: HttpServer;
let base = '';

/** Admits a request that names itself in `x-who`; refuses one that does not (401). */
function who(ctx: RouteContext): string {
  steps.push('authenticate');
  const name = ctx.req.header('x-who');
  if (name === undefined) throw new GatewayError('authentication_required', { message: 'say who you are' });
  return name;
}

function keyedRoute(pattern: string, authenticate: (ctx: RouteContext) => string | Promise<string>): RouteDef<string> {
  return {
    method: 'GET',
    pattern,
    family: 'test',
    auth: { kind: 'key', scope: 'inference', authenticate },
    handle(ctx, name) {
      steps.push('handle');
      ctx.reply.json(200, { name });
    },
  };
}

const routes: RouteDef[] = [
  keyedRoute('/sync', who),
  keyedRoute('/async', async (ctx) => {
    await new Promise((r) => setTimeout(r, 5));
    return `${who(ctx)} (later)`;
  }),
  { method: 'GET', pattern: '/open', family: 'test', auth: { kind: 'public' }, handle: (ctx) => ctx.reply.json(200, { open: true }) },
];

beforeAll(async () => {
  server = createHttpServer({ uws: loadUws().uws, routes, maxBodyBytes: 1024, production: false, trustProxy: false, onComplete: () => undefined, onUnexpectedError: () => undefined });
  base = `http://127.0.0.1:${await server.listen('127.0.0.1', 0)}`;
});

afterAll(async () => {
  await server.drain(100);
});

async function get(path: string, headers: Record<string, string> = {}): Promise<{ status: number; body: Record<string, unknown> }> {
  steps.length = 0;
  const res = await fetch(`${base}${path}`, { headers });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

describe('the server runs the declared authentication before the handler', () => {
  it('hands the authenticator\'s result to the handler', async () => {
    expect(await get('/sync', { 'x-who': 'ada' })).toEqual({ status: 200, body: { name: 'ada' } });
    expect(steps).toEqual(['authenticate', 'handle']);
  });

  it('waits for an asynchronous authenticator, then runs the handler with what it resolved to', async () => {
    expect(await get('/async', { 'x-who': 'ada' })).toEqual({ status: 200, body: { name: 'ada (later)' } });
    expect(steps).toEqual(['authenticate', 'handle']);
  });

  it('answers a refusal in the error envelope without running the handler, synchronous or not', async () => {
    for (const path of ['/sync', '/async']) {
      const res = await get(path);
      expect(res.status).toBe(401);
      expect((res.body.error as { code: string }).code).toBe('authentication_required');
      expect(steps).toEqual(['authenticate']);
    }
  });

  it('answers 405 and 404 before authenticating (route checks come first)', async () => {
    steps.length = 0;
    const res = await fetch(`${base}/sync`, { method: 'DELETE' });
    expect(res.status).toBe(405);
    await res.arrayBuffer();
    expect((await get('/nowhere')).status).toBe(404);
    expect(steps).toEqual([]);
  });

  it('runs a public route\'s handler with no authenticator', async () => {
    expect(await get('/open')).toEqual({ status: 200, body: { open: true } });
  });

  it('refuses to build a server with a route that declares no authentication', () => {
    const undeclared = { method: 'GET', pattern: '/x', family: 'test', handle: () => undefined } as unknown as RouteDef;
    expect(() => createHttpServer({ uws: loadUws().uws, routes: [undeclared], maxBodyBytes: 1024, production: false, trustProxy: false, onComplete: () => undefined, onUnexpectedError: () => undefined })).toThrow(/declares no authentication/);
  });
});

describe('serveRoute', () => {
  it('skips the handler of a request whose client left while an asynchronous authenticator ran', async () => {
    steps.length = 0;
    const req = { aborted: false, header: () => 'ada' };
    const ctx = { req } as unknown as RouteContext;
    const route = keyedRoute('/async', () => Promise.resolve('ada').finally(() => (req.aborted = true)));
    await serveRoute(route as RouteDef, ctx);
    expect(steps).toEqual([]);
  });

  it('calls a synchronous authenticator and the handler in the same turn (no await in between)', () => {
    steps.length = 0;
    const ctx = { req: { header: () => 'ada' }, reply: { json: () => undefined } } as unknown as RouteContext;
    const result = serveRoute(keyedRoute('/sync', who) as RouteDef, ctx);
    expect(result).toBeUndefined();
    expect(steps).toEqual(['authenticate', 'handle']);
  });
});
