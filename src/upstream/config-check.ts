/**
 * `switchboard config check FILE`, past validation: GET {base_url}/models on every server of every
 * endpoint, with the key the gateway would send, and one line per server saying OK or what is wrong (the
 * same causes the gateway logs: `ECONNREFUSED 127.0.0.1:9`, `HTTP 401 from .../models`, an api_key_env
 * that is not set). Servers are checked concurrently and printed in config order.
 */
import { Agent } from 'undici';
import type { Config } from '../config.js';
import { probeModels } from './models-probe.js';
import { causeOf } from './upstream-errors.js';
import { PoolServer, resolveServers } from './upstream-pool.js';
import { ServerHealth } from './server-health.js';

export interface CheckOptions {
  readonly env?: NodeJS.ProcessEnv;
  readonly timeoutMs?: number;
  readonly write?: (line: string) => void;
}

/** Resolves with true when every server answered its models route with a 2xx and has its key. */
export async function checkUpstreams(config: Config, options: CheckOptions = {}): Promise<boolean> {
  const env = options.env ?? process.env;
  const timeoutMs = options.timeoutMs ?? 5000;
  const write = options.write ?? ((line: string) => void process.stdout.write(`${line}\n`));
  const agent = new Agent({ connect: { timeout: timeoutMs } });
  const servers = config.projects.flatMap((p) =>
    p.endpoints.flatMap((e) => {
      const { servers: specs, policy } = resolveServers(e.upstream, env);
      return specs.map((s, i) => ({ label: `${p.id}/${e.slug}`, server: new PoolServer(i, s.baseUrl, s.apiKey, s.missingKeyEnv, s.weight, new ServerHealth(policy)) }));
    }),
  );
  try {
    const lines = await Promise.all(
      servers.map(async ({ label, server }) => {
        const result = await probeModels(agent, server, timeoutMs);
        const answered = result.ok
          ? `GET /models: HTTP ${result.status}, ${result.ms} ms`
          : result.status !== null
            ? `HTTP ${result.status} from ${server.url}/models`
            : causeOf(result.error, server.origin);
        const ok = result.ok && server.missingKeyEnv === null;
        const why = server.missingKeyEnv ? `api_key_env ${server.missingKeyEnv} is not set (${answered})` : answered;
        return { ok, line: `${ok ? 'OK  ' : 'FAIL'} ${label} ${server.url}: ${why}` };
      }),
    );
    for (const { line } of lines) write(line);
    const good = lines.filter((l) => l.ok).length;
    write(`${good} of ${lines.length} upstream servers OK`);
    return good === lines.length;
  } finally {
    await agent.close();
  }
}
