/** Unauthenticated operations routes: liveness, readiness, Prometheus metrics (and the test clock). */
import { timingSafeEqual } from 'node:crypto';
import { z } from 'zod';
import type { Clock } from '../clock.js';
import { GatewayError } from '../errors.js';
import type { RouteDef } from '../http/server.js';
import type { Services } from '../app/services.js';

const advanceSchema = z.strictObject({ advance_ms: z.number().int().min(0) });

/** POST /__test/clock: exists only when the config made the clock controllable (never in production). */
export function testClockRoutes(clock: Clock): RouteDef[] {
  const advance = clock.advance;
  if (!advance) return [];
  return [
    {
      method: 'POST',
      pattern: '/__test/clock',
      family: 'ops',
      auth: { kind: 'public' },
      handle: async ({ req, reply }) => {
        const parsed = advanceSchema.safeParse(await req.json());
        if (!parsed.success) throw new GatewayError('invalid_body', { param: 'advance_ms', message: 'Send {"advance_ms": <non-negative integer>}.' });
        reply.json(200, { now: advance(parsed.data.advance_ms) });
      },
    },
  ];
}

/**
 * `upstream`: the state of every endpoint's upstream servers, reported by /readyz, as is the shared limits'
 * dependency (`services.limits.health`, absent in one process). It does not decide
 * readiness: every replica shares the same model servers, so taking this one out of a load balancer
 * because a model server is down would only move the same failures elsewhere. Its rows (upstream-pool.ts
 * PoolReport) are written out as they are, so this route needs nothing of their shape.
 */
export function opsRoutes(services: Services, upstream?: { report(): readonly object[] }): RouteDef[] {
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
    {
      method: 'GET',
      pattern: '/readyz',
      family: 'ops',
      auth: { kind: 'public' },
      plainHttpAllowed: true,
      servedWhileDraining: true,
      handle: ({ reply, draining }) => {
        const checks = { store: services.isStoreOpen(), pool: services.pool.ready };
        const ready = checks.store && checks.pool && !draining;
        // Shared limits (Redis, or the workers' shared counters) are reported, not a readiness condition:
        // every replica shares them, so taking one out of a load balancer would not bring them back.
        // PostgreSQL likewise: every replica shares it.
        const dependencies = [services.limits.health?.(), services.storeHealth?.()].filter((d) => d !== undefined && d !== null);
        const body = { status: draining ? 'draining' : ready ? 'ready' : 'not_ready', checks, ...(dependencies.length > 0 ? { dependencies } : {}) };
        reply.json(ready ? 200 : 503, upstream ? { ...body, upstreams: upstream.report() } : body);
      },
    },
  ];
}

/**
 * GET /metrics, on the main listener or a listener of its own (server.metrics). With a token, a scrape
 * must send `Authorization: Bearer <token>` (compared in constant time); the token is read once, at start.
 */
export function metricsRoutes(services: Services, token: string | null): RouteDef[] {
  const expected = token === null ? null : Buffer.from(`Bearer ${token}`);
  return [
    {
      method: 'GET',
      pattern: '/metrics',
      family: 'ops',
      auth: { kind: 'in-handler', credential: 'the scrape token, when server.metrics names one', why: 'not an API key' },
      plainHttpAllowed: true,
      servedWhileDraining: true,
      handle: async ({ req, reply }) => {
        if (expected !== null) {
          const sent = Buffer.from(req.header('authorization') ?? '');
          if (sent.length !== expected.length || !timingSafeEqual(sent, expected)) {
            throw new GatewayError('authentication_required', { message: 'GET /metrics needs Authorization: Bearer <the token named by server.metrics.token_env>.' });
          }
        }
        const text = await services.metrics.registry.metrics();
        reply.send(200, text, services.metrics.registry.contentType);
      },
    },
  ];
}
