/** The config file's `exec:` section. */
import { z } from 'zod';

/** The execution surface's deployment settings (docs/exec.md). */
export const execSchema = z.strictObject({
  /** An agent silent for this long goes offline (heartbeats every third of it). */
  lease_ms: z.number().int().min(1000).default(30_000),
  /** An invocation's timeout when the request names none (requests may name 1 ms to 1 h). */
  default_timeout_ms: z.number().int().positive().max(3_600_000).default(60_000),
  /** Output kept per invocation; the rest is dropped and `output_truncated` says so. */
  output_cap_bytes: z.number().int().min(1024).default(64 * 1024),
  /** Agent connections (each one enrollment) per join or agent key, sliding 60 s; 0: unmetered (issue 31). */
  enrollments_per_minute_per_key: z.number().int().min(0).default(12),
  /** Agent connections per project, all its keys together, sliding 60 s; 0: unmetered. */
  enrollments_per_minute_per_project: z.number().int().min(0).default(120),
  /**
   * The MCP server's DNS-rebinding guard (docs/mcp.md "Origin and Host"): host names a request's Host (and a
   * browser's Origin) may carry. Empty: loopback names when the gateway listens on a loopback address,
   * every Host (and no browser Origin) otherwise.
   */
  mcp_allowed_hosts: z.array(z.string().min(1)).default([]),
  /** Browser origins (`scheme://host[:port]`) allowed to call the MCP server besides those hosts. */
  mcp_allowed_origins: z.array(z.string().min(1)).default([]),
  /**
   * MCP sessions held at once (docs/mcp.md "Sessions"): per API key, per project, and by this process. Past
   * a key's or project's cap its own least recently used idle session is closed, never another tenant's.
   */
  mcp_sessions: z
    .strictObject({
      per_key: z.number().int().min(1).default(100),
      per_project: z.number().int().min(1).default(1_000),
      total: z.number().int().min(1).default(10_000),
    })
    .default({ per_key: 100, per_project: 1_000, total: 10_000 }),
});
