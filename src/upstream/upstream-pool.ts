/**
 * An endpoint's pool of upstream servers (one model, one or more servers): the choice of a server for
 * each request (server-choice.ts), the count of requests each has outstanding, and each one's passive
 * health (server-health.ts) with its probes. No I/O of its own: the probe and the clock are passed in, so
 * the whole pool runs under a fake clock in unit tests.
 *
 * State is per endpoint and server: two endpoints naming one server count and judge it separately (their
 * keys and traffic differ), while the HTTP connections to it are shared by the client.
 */
import type { EndpointConfig } from '../config.js';
import { chooseServer, type Choosable } from './server-choice.js';
import { isServerFailureStatus, ServerHealth, type HealthChange, type HealthPolicy, type HealthState } from './server-health.js';

export type UpstreamConfig = EndpointConfig['upstream'];

/** An endpoint as the upstream client needs it: catalog records and config endpoints both fit. */
export interface UpstreamEndpoint {
  readonly id: string;
  readonly slug: string;
  readonly projectId: string;
  readonly upstream: UpstreamConfig;
}

export class PoolServer implements Choosable {
  /** Scheme, host and port (no credentials): the connection pool's key, and what logs and reports show. */
  readonly origin: string;
  /** The base URL's path (`/v1`), put before every call's path. */
  readonly prefix: string;
  outstanding = 0;

  constructor(
    readonly index: number,
    baseUrl: string,
    /** Resolved once, when the pool is built (config load), never per request. */
    readonly apiKey: string | null,
    /** Named in the config but absent from the environment: start-up and `config check` say so. */
    readonly missingKeyEnv: string | null,
    readonly weight: number,
    readonly health: ServerHealth,
  ) {
    const url = new URL(baseUrl);
    this.origin = url.origin;
    this.prefix = url.pathname.replace(/\/+$/, '');
  }

  get available(): boolean {
    return this.health.available;
  }

  /** For logs: the base URL without credentials. */
  get url(): string {
    return this.origin + this.prefix;
  }
}

export interface PoolDeps {
  readonly now: () => number;
  /** GET {base_url}/models: resolves with null when the server answered like a live one, else the cause. Never rejects. */
  readonly probe: (server: PoolServer) => Promise<string | null>;
  /** One call per health change (taken out, back, still down after a probe). */
  readonly onChange: (pool: EndpointPool, server: PoolServer, change: Exclude<HealthChange, null>) => void;
}

export interface ServerReport {
  readonly url: string;
  readonly state: HealthState;
  readonly weight: number;
  readonly outstanding: number;
  readonly consecutive_failures: number;
  readonly last_failure: string | null;
  /** While down: how long until a probe may bring it back. */
  readonly retry_in_ms: number | null;
}

export interface PoolReport {
  readonly project: string;
  readonly endpoint: string;
  readonly endpoint_id: string;
  /** Some server takes requests now. */
  readonly healthy: boolean;
  readonly servers: readonly ServerReport[];
}

/** A server of a pool with its key already resolved. */
export interface ServerSpec {
  readonly baseUrl: string;
  readonly apiKey: string | null;
  readonly missingKeyEnv: string | null;
  readonly weight: number;
}

/** Stored endpoint rows written before pools existed have no `servers` or `health`: one server, these defaults. */
const DEFAULT_POLICY: HealthPolicy = { failureThreshold: 3, cooldownMs: 10_000 };

type StoredUpstream = Pick<UpstreamConfig, 'base_url' | 'api_key_env'> & Partial<Pick<UpstreamConfig, 'servers' | 'health'>>;

/** The pool's servers, each key read from `env` now: once, at config load, never per request. */
export function resolveServers(upstream: StoredUpstream, env: NodeJS.ProcessEnv): { servers: ServerSpec[]; policy: HealthPolicy } {
  const policy = upstream.health ? { failureThreshold: upstream.health.failure_threshold, cooldownMs: upstream.health.cooldown_ms } : DEFAULT_POLICY;
  const listed = upstream.servers ?? [{ base_url: upstream.base_url, api_key_env: upstream.api_key_env, weight: 1 }];
  const servers = listed.map((s) => {
    // An empty variable is as good as none: no server takes an empty bearer token.
    const apiKey = s.api_key_env ? env[s.api_key_env] || null : null;
    return { baseUrl: s.base_url, apiKey, missingKeyEnv: s.api_key_env && apiKey === null ? s.api_key_env : null, weight: s.weight };
  });
  return { servers, policy };
}

export class EndpointPool {
  readonly servers: readonly PoolServer[];
  #cursor = 0;
  /** Servers not up: while none is, a pick looks for no due probe (the hot path). */
  #out = 0;
  readonly #probes = new Set<Promise<void>>();

  constructor(
    readonly endpoint: { readonly id: string; readonly slug: string; readonly projectId: string },
    servers: readonly ServerSpec[],
    policy: HealthPolicy,
    readonly deps: PoolDeps,
  ) {
    this.servers = servers.map((s, i) => new PoolServer(i, s.baseUrl, s.apiKey, s.missingKeyEnv, s.weight, new ServerHealth(policy)));
  }

  /**
   * The server for the next request (its outstanding count taken), or null when none takes requests.
   * `exclude`: the server a retry must avoid. Starts any probe that has come due.
   */
  pick(exclude: PoolServer | null): PoolServer | null {
    if (this.#out > 0) this.#startDueProbes();
    const i = chooseServer(this.servers, this.#cursor, exclude === null ? -1 : exclude.index);
    const server = this.servers[i];
    if (!server) return null;
    this.#cursor = (i + 1) % this.servers.length;
    server.outstanding += 1;
    return server;
  }

  release(server: PoolServer): void {
    server.outstanding -= 1;
  }

  /** The server answered with this status. */
  answered(server: PoolServer, status: number, cause: string): void {
    if (isServerFailureStatus(status)) this.failed(server, cause);
    else server.health.succeeded();
  }

  /** It could not be reached, dropped the connection, or answered 502/503/504. */
  failed(server: PoolServer, cause: string): void {
    const change = server.health.failed(this.deps.now(), cause);
    if (change === 'taken_out') this.#out += 1;
    if (change) this.deps.onChange(this, server, change);
  }

  /** Some server takes requests now (the router's eligibility hook). */
  get healthy(): boolean {
    this.#startDueProbes();
    return this.servers.some((s) => s.available);
  }

  /** Resolves when a running probe settles (null when none runs): a request with no server waits for it. */
  probeSettled(): Promise<void> | null {
    this.#startDueProbes();
    return this.#probes.size === 0 ? null : Promise.race(this.#probes);
  }

  report(): PoolReport {
    this.#startDueProbes();
    const now = this.deps.now();
    return {
      project: this.endpoint.projectId,
      endpoint: this.endpoint.slug,
      endpoint_id: this.endpoint.id,
      healthy: this.servers.some((s) => s.available),
      servers: this.servers.map((s) => {
        const retryAt = s.health.retryAt;
        return {
          url: s.url,
          state: s.health.state,
          weight: s.weight,
          outstanding: s.outstanding,
          consecutive_failures: s.health.failures,
          last_failure: s.health.lastFailure,
          retry_in_ms: retryAt === null ? null : Math.max(0, retryAt - now),
        };
      }),
    };
  }

  /** Probes are started by reads of the pool, not by timers: an idle gateway does no background work. */
  #startDueProbes(): void {
    for (const server of this.servers) {
      if (server.health.state !== 'down' || !server.health.probeDue(this.deps.now())) continue;
      const probing: Promise<void> = this.deps.probe(server).then((failure) => {
        const change = failure === null ? server.health.probeSucceeded() : server.health.probeFailed(this.deps.now(), failure);
        if (change === 'back') this.#out -= 1;
        if (change) this.deps.onChange(this, server, change);
        this.#probes.delete(probing);
      });
      this.#probes.add(probing);
    }
  }
}
