/**
 * The whole config file's schema, its sections put together, with the checks that span sections (nothing
 * testing-only in production) or projects (project ids and slugs, endpoint ids and key values are global),
 * and the types the rest of the gateway reads the parsed file through.
 */
import { z } from 'zod';
import { dashboardSchema } from './dashboard.js';
import { budgetSchema, duplicates, realtimeSchema } from './endpoint.js';
import { execSchema } from './exec.js';
import { coordinationSchema, poolSchema, securitySchema, serverSchema, storageSchema } from './infrastructure.js';
import { projectSchema } from './project.js';
import { semanticRouterSchema } from './semantic-router.js';
import { audioSchema, batchesSchema, featuresSchema, filesSchema, limitsSchema, mediaSchema, testingSchema, timeoutsSchema, webhooksSchema } from './serving.js';
import { tracingSchema } from './tracing.js';

export const configSchema = z
  .strictObject({
    server: serverSchema.prefault({}),
    storage: storageSchema.prefault({}),
    coordination: coordinationSchema.prefault({}),
    security: securitySchema.prefault({}),
    pool: poolSchema.prefault({}),
    timeouts: timeoutsSchema.prefault({}),
    features: featuresSchema.prefault({}),
    testing: testingSchema.prefault({}),
    limits: limitsSchema.prefault({}),
    webhooks: webhooksSchema.prefault({}),
    media: mediaSchema.prefault({}),
    audio: audioSchema.prefault({}),
    files: filesSchema.prefault({}),
    semantic_router: semanticRouterSchema.prefault({}),
    exec: execSchema.prefault({}),
    batches: batchesSchema.prefault({}),
    dashboard: dashboardSchema.prefault({}),
    /** OpenTelemetry traces over OTLP/HTTP; off by default (src/tracing). */
    tracing: tracingSchema.prefault({}),
    projects: z.array(projectSchema).default([]),
  })
  .superRefine((c, ctx) => {
    c.dashboard.oidc_providers.forEach((p, i) => {
      if (p.allow_insecure_issuer && c.server.production) {
        ctx.addIssue({ code: 'custom', path: ['dashboard', 'oidc_providers', i, 'allow_insecure_issuer'], message: 'cannot be on with server.production: true' });
      }
    });
    if (c.testing.controllable_clock && c.server.production) {
      ctx.addIssue({ code: 'custom', path: ['testing', 'controllable_clock'], message: 'cannot be on with server.production: true' });
    }
    if (c.testing.event_injection && c.server.production) {
      ctx.addIssue({ code: 'custom', path: ['testing', 'event_injection'], message: 'cannot be on with server.production: true' });
    }
    const duplicate = (path: (string | number)[]): void => {
      ctx.addIssue({ code: 'custom', path, message: 'is a duplicate' });
    };
    duplicates(c.projects.map((p) => p.id)).forEach((i) => duplicate(['projects', i, 'id']));
    duplicates(c.projects.map((p) => p.slug)).forEach((i) => duplicate(['projects', i, 'slug']));
    // Endpoint ids and key values are global: the same one in two projects would move between them.
    duplicatesAcrossProjects(c.projects.map((p) => p.endpoints.map((e) => e.id))).forEach(([pi, i]) => duplicate(['projects', pi, 'endpoints', i, 'id']));
    duplicatesAcrossProjects(c.projects.map((p) => p.keys.map((k) => k.value))).forEach(([pi, i]) => duplicate(['projects', pi, 'keys', i, 'value']));
  });

/**
 * `[project index, item index]` of each value an earlier project already holds. A value repeated inside one
 * project is left out: the project's own check (project.ts) names it, and naming it here too printed the
 * same line twice.
 */
function duplicatesAcrossProjects(perProject: readonly (readonly string[])[]): [number, number][] {
  const firstProject = new Map<string, number>();
  const out: [number, number][] = [];
  perProject.forEach((values, pi) => {
    const own = new Set<string>();
    values.forEach((v, i) => {
      const first = firstProject.get(v);
      if (first !== undefined && first !== pi && !own.has(v)) out.push([pi, i]);
      if (first === undefined) firstProject.set(v, pi);
      own.add(v);
    });
  });
  return out;
}

export type Config = z.infer<typeof configSchema>;
export type ProjectConfig = Config['projects'][number];
export type EndpointConfig = ProjectConfig['endpoints'][number];
export type ModelConfig = EndpointConfig['model'];
export type KeyConfig = ProjectConfig['keys'][number];
export type TimeoutOverrides = Config['timeouts'];
export type BudgetConfig = z.infer<typeof budgetSchema>;
export type WebhooksConfig = Config['webhooks'];
export type RealtimeConfig = z.infer<typeof realtimeSchema>;
/** What a realtime endpoint without a `realtime` block gets. */
export const REALTIME_DEFAULTS: RealtimeConfig = realtimeSchema.parse({});
export type MediaConfig = Config['media'];
export type AudioConfig = Config['audio'];
export type FilesConfig = Config['files'];
export type SemanticRouterConfig = Config['semantic_router'];
