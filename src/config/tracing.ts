/**
 * The `tracing:` section of the config file (issue 34): OpenTelemetry traces, off by default. When on,
 * spans go over OTLP/HTTP to `otlp_endpoint`, the collector's traces URL, wherever the operator points it
 * (the outbound guard that refuses private addresses is for targets a caller names, not this one).
 */
import { z } from 'zod';

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
/** An HTTP header name (RFC 9110 token). */
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

export const tracingSchema = z
  .strictObject({
    enabled: z.boolean().default(false),
    /** The collector's OTLP/HTTP traces URL, e.g. http://otel-collector:4318/v1/traces. */
    otlp_endpoint: z.url({ protocol: /^https?$/ }).optional(),
    /**
     * Headers sent with every export, each value read from the named environment variable at start (a
     * collector's API key is a secret, kept out of the file like upstream keys): `{Authorization: OTLP_AUTH}`.
     */
    headers_env: z.record(z.string().regex(HEADER_NAME, 'must be an HTTP header name'), z.string().regex(ENV_NAME, 'must be an environment variable name')).default({}),
    /** The resource's `service.name`. */
    service_name: z.string().min(1).default('switchboard'),
    /**
     * The share of new traces recorded (0 to 1). A client's `traceparent` decides for its own trace: a
     * sampled parent is recorded, an unsampled one is not (ParentBased sampling).
     */
    sample_ratio: z.number().min(0).max(1).default(1),
    /** How long finished spans wait to be exported in one batch (the BatchSpanProcessor's delay). */
    export_delay_ms: z.number().int().min(1).max(60_000).default(5_000),
  })
  .superRefine((t, ctx) => {
    if (t.enabled && t.otlp_endpoint === undefined) ctx.addIssue({ code: 'custom', path: ['otlp_endpoint'], message: 'is required when tracing is enabled' });
  });

export type TracingConfig = z.infer<typeof tracingSchema>;
