/**
 * The config file's sections that tune how requests are served: tier timeouts, optional features, test
 * hooks, webhook delivery, management rate limits, batches, files, media fetches and audio.
 */
import { z } from 'zod';

const tierTimeoutSchema = z.strictObject({
  request_ms: z.number().int().positive(),
  idle_ms: z.number().int().positive(),
});

/** SPEC "Timeouts by service tier" are fixed for clients; operators (and test configs) may override them. */
export const timeoutsSchema = z.strictObject({
  free: tierTimeoutSchema.optional(),
  cpu: tierTimeoutSchema.optional(),
  gpu: tierTimeoutSchema.optional(),
  self_hosted: tierTimeoutSchema.optional(),
});

export const featuresSchema = z.strictObject({
  /** SPEC Message object: video_url parts are served only when the deployment enables video input. */
  video_input: z.boolean().default(false),
  /** SPEC Message object: audio input is operator-gated and on by default. */
  audio_input: z.boolean().default(true),
});

export const testingSchema = z.strictObject({
  /** Exposes POST /__test/clock to move the gateway's clock forward: for test suites only. */
  controllable_clock: z.boolean().default(false),
  /** Exposes POST /__test/webhook-events to emit arbitrary events into the outbox: tests and bench only. */
  event_injection: z.boolean().default(false),
});

/** SPEC Events 4 and Limits; tests shorten the attempt timeout, operators may tune concurrency. */
export const webhooksSchema = z.strictObject({
  /** Delay before each retry, after the previous failure; attempts = retries + 1 (SPEC: 6). */
  retry_schedule_ms: z.array(z.number().int().positive()).max(10).default([60_000, 300_000, 900_000, 3_600_000, 14_400_000]),
  attempt_timeout_ms: z.number().int().positive().max(300_000).default(30_000),
  /** Attempts in flight at once, overall and per webhook endpoint. */
  max_in_flight: z.number().int().min(1).max(1024).default(64),
  per_endpoint_in_flight: z.number().int().min(1).max(256).default(16),
  /** How often the dispatcher looks for due deliveries (emissions also wake it at once). */
  poll_interval_ms: z.number().int().min(10).max(60_000).default(250),
  /** Delivery records that reached an end, and events none still needs, are deleted after this; 0 keeps them. */
  retention_days: z.number().int().min(0).max(3650).default(30),
});

/** SPEC "Management API rate limit": deployment-wide ceilings per project, per minute, no burst. */
export const limitsSchema = z.strictObject({
  management_requests_per_minute: z.number().int().min(0).default(60),
  files_requests_per_minute: z.number().int().min(0).default(600),
  conversation_items_requests_per_minute: z.number().int().min(0).default(600),
});

/** Batches (issue 14, docs/decisions.md "Batches"). */
export const batchesSchema = z.strictObject({
  /** Batch lines in flight at once, across every batch of the gateway: live requests keep the rest of the upstream. */
  concurrency: z.number().int().positive().max(256).default(4),
  /** Lines one input file may hold (OpenAI's cap). */
  max_lines: z.number().int().positive().default(50_000),
});

/** Files and uploads (docs/decisions.md "Files and uploads"): byte caps. */
export const filesSchema = z.strictObject({
  /** One POST /v1/files body's file; 413 past it. */
  max_bytes: z.number().int().positive().default(512 * 1024 * 1024),
  /** One upload part (POST /v1/uploads/{id}/parts); 413 past it. */
  max_part_bytes: z.number().int().positive().default(64 * 1024 * 1024),
  /** An upload's declared `bytes` (the assembled file). */
  max_upload_bytes: z.number().int().positive().default(8 * 1024 * 1024 * 1024),
});

/** Server-side image fetches for image_url parts (SPEC "Message object"). */
export const mediaSchema = z.strictObject({
  fetch_timeout_ms: z.number().int().positive().max(120_000).default(10_000),
  max_image_bytes: z.number().int().positive().default(10 * 1024 * 1024),
  /** Across every image of one request. */
  max_total_bytes: z.number().int().positive().default(32 * 1024 * 1024),
  max_redirects: z.number().int().min(0).max(20).default(5),
  /** Sent in the User-Agent of every third-party fetch, with the product token and version. */
  user_agent_link: z.url().default('https://github.com/switchboard-gateway/switchboard'),
  user_agent_contact: z.string().min(3).default('mailto:operator@switchboard.invalid'),
});

export const audioSchema = z.strictObject({
  /** Multipart uploads to the transcription and translation routes (413 past it). */
  max_upload_bytes: z.number().int().positive().default(25 * 1024 * 1024),
  /** Largest realtime client message; a larger one closes the connection with 1009 (docs/realtime.md "Backpressure"). */
  realtime_max_message_bytes: z.number().int().min(1024).default(4 * 1024 * 1024),
});

