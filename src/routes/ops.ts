/** Unauthenticated operations routes: liveness, readiness, Prometheus metrics (and the test clock). */
import { timingSafeEqual } from 'node:crypto';
import { z } from 'zod';
import type { Clock } from '../clock.js';
import { GatewayError } from '../errors.js';
import { isLoopbackAddress } from '../core/net/address-policy.js';
import { notFoundMessage, type RouteDef } from '../http/server.js';
import type { Services } from '../app/services.js';

const advanceSchema = z.strictObject({ advance_ms: z.number().int().min(0), freeze: z.boolean().optional() });

/**
 * The environment variable that must be `1`, besides the config's `testing:` flag, for a test hook to exist
 * (issue 31): a config copied from a test suite into a deployment that left `production` false would
 * otherwise let anyone move the clock or forge webhook events.
 */
export const TESTING_ENV = 'SWITCHBOARD_TESTING';

export function testingAllowed(env: NodeJS.ProcessEnv): boolean {
  return env[TESTING_ENV] === '1';
}

/**
 * A test hook answers callers on this machine only (the socket's peer, never X-Forwarded-For); anyone else
 * gets the 404 of a path that does not exist, so an outsider cannot tell it is there.
 */
export function loopbackOnly(route: RouteDef): RouteDef {
  return {
    ...route,
    handle(ctx, auth) {
      if (!isLoopbackAddress(ctx.req.peerAddress)) throw new GatewayError('not_found', { message: notFoundMessage(ctx.req.method, ctx.req.path) });
      return route.handle(ctx, auth);
    },
  };
}

/**
 * POST /__test/clock: exists only when the config made the clock controllable (never in production) and
 * SWITCHBOARD_TESTING=1 (main.ts leaves the clock the system's otherwise); loopback callers only.
 */
export function testClockRoutes(clock: Clock): RouteDef[] {
  const { advance, freeze } = clock;
  if (!advance) return [];
  return [
    loopbackOnly({
      method: 'POST',
      pattern: '/__test/clock',
      family: 'ops',
      auth: { kind: 'public' },
      handle: async ({ req, reply }) => {
        const parsed = advanceSchema.safeParse(await req.json());
        if (!parsed.success) throw new GatewayError('invalid_body', { param: 'advance_ms', message: 'Send {"advance_ms": <non-negative integer>, "freeze"?: <boolean>}.' });
        if (parsed.data.freeze !== undefined) freeze?.(parsed.data.freeze);
        reply.json(200, { now: advance(parsed.data.advance_ms) });
      },
    }),
  ];
}

/**
 * Who may read /readyz's detail (issue 31): the dependencies and every endpoint's upstream servers name
 * projects, endpoints and server URLs with their last failure, which are the operator's, not the public's.
 * `token`: server.metrics' scrape token, which the caller then sends as for /metrics; `always`: the route is
 * on the metrics listener, a scrape network of its own. Otherwise (no token) nobody on the main listener.
 */
export interface ReadyzDetail {
  readonly token: string | null;
  readonly always: boolean;
}

/** `Authorization: Bearer <token>`, compared in constant time. */
function bearerMatcher(token: string | null): ((header: string | undefined) => boolean) | null {
  if (token === null) return null;
  const expected = Buffer.from(`Bearer ${token}`);
  return (header) => {
    const sent = Buffer.from(header ?? '');
    return sent.length === expected.length && timingSafeEqual(sent, expected);
  };
}

/**
 * GET /readyz. Everyone reads the status (ready, not_ready, draining) and which check holds it back
 * (`checks`: store, pool), as load balancers need. `upstream`: the state of every endpoint's upstream
 * servers, and `dependencies` (shared limits, PostgreSQL): the detail, for the callers `detail` admits.
 * Neither decides readiness: every replica shares them, so taking this one out of a load balancer would
 * only move the same failures elsewhere. Upstream rows (upstream-pool.ts PoolReport) are written out as
 * they are, so this route needs nothing of their shape.
 */
export function readyzRoute(services: Services, detail: ReadyzDetail, upstream?: { report(): readonly object[] }): RouteDef {
  const holdsToken = bearerMatcher(detail.token);
  return {
    method: 'GET',
    pattern: '/readyz',
    family: 'ops',
    // A probe: public. Only its detail asks for the scrape token, in the handler.
    auth: { kind: 'public' },
    plainHttpAllowed: true,
    servedWhileDraining: true,
    handle: ({ req, reply, draining }) => {
      const checks = { store: services.isStoreOpen(), pool: services.pool.ready };
      const ready = checks.store && checks.pool && !draining;
      const body = { status: draining ? 'draining' : ready ? 'ready' : 'not_ready', checks };
      const status = ready ? 200 : 503;
      if (!detail.always && !(holdsToken?.(req.header('authorization')) ?? false)) return reply.json(status, body);
      const dependencies = [services.limits.health?.(), services.storeHealth?.()].filter((d) => d !== undefined && d !== null);
      reply.json(status, { ...body, ...(dependencies.length > 0 ? { dependencies } : {}), ...(upstream ? { upstreams: upstream.report() } : {}) });
    },
  };
}

export function opsRoutes(services: Services, detail: ReadyzDetail, upstream?: { report(): readonly object[] }): RouteDef[] {
  return [
    {
      method: 'GET',
      pattern: '/healthz',
      family: 'ops',
      auth: { kind: 'public' },
      plainHttpAllowed: true,
      servedWhileDraining: true,
      handle: ({ reply }) => reply.json(200, { status: 'ok' }),
    },
    readyzRoute(services, detail, upstream),
  ];
}

/**
 * GET /metrics, on the main listener or a listener of its own (server.metrics). With a token, a scrape
 * must send `Authorization: Bearer <token>` (compared in constant time); the token is read once, at start.
 * `scrape`: under `serve --workers N`, the whole process's metrics (metrics-workers.ts); else this
 * gateway's registry is rendered directly.
 */
export function metricsRoutes(services: Services, token: string | null, scrape?: () => Promise<string>): RouteDef[] {
  const holdsToken = bearerMatcher(token);
  return [
    {
      method: 'GET',
      pattern: '/metrics',
      family: 'ops',
      auth: { kind: 'in-handler', credential: 'the scrape token, when server.metrics names one', why: 'not an API key' },
      plainHttpAllowed: true,
      servedWhileDraining: true,
      handle: async ({ req, reply }) => {
        if (holdsToken !== null && !holdsToken(req.header('authorization'))) {
          throw new GatewayError('authentication_required', { message: 'GET /metrics needs Authorization: Bearer <the token named by server.metrics.token_env>.' });
        }
        const text = await (scrape ?? (() => services.metrics.registry.metrics()))();
        reply.send(200, text, services.metrics.registry.contentType);
      },
    },
  ];
}
