/**
 * The suite of the router base URL as a complete OpenAI base URL (issue 21) and of the embeddings route:
 * the usual test projects and the router project (with a few more keys), plus
 *   - proj_embed: embedding endpoints that serve one workspace of two (reach, fallback, budgets);
 *   - proj_edge: embedding endpoints whose upstream is a scripted local server (stalls, bare or broken
 *     answers) for abort, deadline and response-shape tests;
 *   - proj_tpm: one embedding endpoint under a small token-per-minute ceiling.
 */
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll } from 'vitest';
import { makeKeys, testConfig, type TestKeys } from './configs.js';
import { mintTestKey, startGatewayProcess, startSimulatorProcess, type GatewayProcess, type SimulatorProcess } from './processes.js';
import { makeRouterKeys, R_MATH, routerProject, WS_SOLO, type RouterKeys } from './router-config.js';
import { useProcesses } from './suite.js';

export const EMBED_PROJECT = 'proj_embed';
export const WS_ONE = 'ws_e1e1e1';
export const WS_TWO = 'ws_e2e2e2';
export const VEC_ID = 'e0000000-0000-4000-8000-000000000001';
export const CAPPED_ID = 'e0000000-0000-4000-8000-000000000002';
/** Its hard cap: one call of 120 ASCII characters (30 tokens at the simulator's 4 bytes a token) spends it. */
export const CAPPED_TOKENS = 30;
export const EDGE_PROJECT = 'proj_edge';
export const TPM_PROJECT = 'proj_tpm';
export const TPM_LIMIT = 20;

export interface ExtraKeys {
  /** proj_router: confined to WS_SOLO. */
  readonly routerSolo: string;
  /** proj_router: bound to the math endpoint. */
  readonly routerMathOnly: string;
  /** proj_embed: reaches the whole project. */
  readonly embedFull: string;
  /** proj_embed: confined to WS_TWO, which no embedding endpoint serves. */
  readonly embedTwo: string;
  readonly edge: string;
  readonly tpm: string;
}

export interface StalledCall {
  readonly path: string;
  /** Resolves when the gateway closes the connection (abort or deadline). */
  readonly closed: Promise<void>;
}

/** A model server that never answers under /hang, answers without model and usage under /bare, and with non-JSON under /broken. */
export interface ScriptedUpstream {
  readonly url: string;
  readonly stalled: StalledCall[];
  waitForStall(count: number, timeoutMs?: number): Promise<StalledCall>;
  close(): Promise<void>;
}

export const BARE_VECTOR = [0.5, 0.25];

async function startScriptedUpstream(): Promise<ScriptedUpstream> {
  const stalled: StalledCall[] = [];
  const server = createServer((req: IncomingMessage, res) => {
    req.resume();
    const path = req.url ?? '';
    if (path.startsWith('/hang/')) {
      stalled.push({ path, closed: new Promise((resolve) => res.on('close', () => resolve())) });
      return;
    }
    req.on('end', () => {
      if (path.startsWith('/bare/')) {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ object: 'list', data: [{ object: 'embedding', index: 0, embedding: BARE_VECTOR }] }));
      } else {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end('this is not json');
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    stalled,
    async waitForStall(count, timeoutMs = 5000) {
      const until = Date.now() + timeoutMs;
      while (stalled.length < count) {
        if (Date.now() > until) throw new Error(`the scripted upstream saw ${stalled.length} stalled calls, not ${count}`);
        await new Promise((r) => setTimeout(r, 10));
      }
      return stalled[count - 1] as StalledCall;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function embeddingEndpoint(id: string, slug: string, baseUrl: string, extra: Record<string, unknown> = {}) {
  return { id, slug, name: `Embeddings ${slug}`, kind: 'embedding', tier: 'cpu', model: { id: `model-${slug}`, context_window: 8192 }, upstream: { base_url: baseUrl, model: 'sim-embed' }, ...extra };
}

function extraProjects(sim: string, scripted: string, keys: ExtraKeys) {
  const edgeId = (n: number): string => `f0000000-0000-4000-8000-00000000000${n}`;
  return [
    {
      id: EMBED_PROJECT,
      slug: 'embed',
      default_workspace: WS_TWO,
      workspaces: [
        { id: WS_ONE, name: 'One' },
        { id: WS_TWO, name: 'Two' },
      ],
      endpoints: [
        embeddingEndpoint(VEC_ID, 'vec', sim, { workspaces: [WS_ONE] }),
        // Sorts after vec, so the router base URL never picks it.
        embeddingEndpoint(CAPPED_ID, 'z-capped', sim, { workspaces: [WS_ONE], budget: { hard_cap_tokens: CAPPED_TOKENS } }),
      ],
      keys: [
        { value: keys.embedFull, scopes: ['inference', 'management'] },
        { value: keys.embedTwo, scopes: ['inference'], allowed_workspace_ids: [WS_TWO] },
      ],
    },
    {
      id: EDGE_PROJECT,
      slug: 'edge',
      endpoints: [
        embeddingEndpoint(edgeId(1), 'hang', `${scripted}/hang/v1`, { tier: 'gpu' }),
        embeddingEndpoint(edgeId(2), 'hang-free', `${scripted}/hang/v1`, { tier: 'free' }),
        embeddingEndpoint(edgeId(3), 'bare', `${scripted}/bare/v1`),
        embeddingEndpoint(edgeId(4), 'broken', `${scripted}/broken/v1`),
      ],
      keys: [{ value: keys.edge, scopes: ['inference'] }],
    },
    {
      id: TPM_PROJECT,
      slug: 'tpm',
      rate_limit: { tokens_per_minute: TPM_LIMIT },
      endpoints: [embeddingEndpoint(edgeId(5), 'vec', sim)],
      keys: [{ value: keys.tpm, scopes: ['inference'] }],
    },
  ];
}

export interface BaseUrlSuite {
  readonly sim: SimulatorProcess;
  readonly gw: GatewayProcess;
  readonly upstream: ScriptedUpstream;
  readonly keys: TestKeys;
  readonly routerKeys: RouterKeys;
  readonly extra: ExtraKeys;
}

export function useBaseUrlSuite(): BaseUrlSuite {
  let upstream: ScriptedUpstream | null = null;
  const suite = useProcesses(async () => {
    const keys = makeKeys();
    const routerKeys = makeRouterKeys();
    const extra: ExtraKeys = {
      routerSolo: mintTestKey('router'),
      routerMathOnly: mintTestKey('router'),
      embedFull: mintTestKey('embed'),
      embedTwo: mintTestKey('embed'),
      edge: mintTestKey('edge'),
      tpm: mintTestKey('tpm'),
    };
    const sim = await startSimulatorProcess();
    upstream = await startScriptedUpstream();
    const router = routerProject(sim.url, routerKeys);
    const routerWithKeys = {
      ...router,
      keys: [
        ...router.keys,
        { value: extra.routerSolo, scopes: ['inference'], allowed_workspace_ids: [WS_SOLO] },
        { value: extra.routerMathOnly, scopes: ['inference'], endpoint_id: R_MATH },
      ],
    };
    const config = testConfig(sim.url, keys, { extraProjects: [routerWithKeys, ...extraProjects(sim.url, upstream.url, extra)] });
    const gw = await startGatewayProcess(config);
    return { sim, gw, upstream, keys, routerKeys, extra };
  });
  // Registered after useProcesses' own afterAll, so it runs once the gateway has stopped.
  afterAll(async () => {
    await upstream?.close();
  });
  return suite;
}
