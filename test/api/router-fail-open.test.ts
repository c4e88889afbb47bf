/**
 * SPEC behaviour 3: semantic routing fails open. A project with two generative endpoints and no embedding
 * endpoint, and one whose embedding endpoint cannot be reached, still serve every turn, on the default.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeKeys, testConfig } from '../helpers/configs.js';
import { ERROR, waitForLog } from '../helpers/gateway-log.js';
import { call, type JsonResponse } from '../helpers/http.js';
import { mintTestKey, startGatewayProcess, startSimulatorProcess, type GatewayProcess, type SimulatorProcess } from '../helpers/processes.js';

let sim: SimulatorProcess;
let gw: GatewayProcess;
const keys = { noEmbed: mintTestKey('noembed'), broken: mintTestKey('broken'), flaky: mintTestKey('flaky') };
/** An embedding server that answers (through the simulator) until the test takes it down. */
let flaky: Server;

function project(id: string, slug: string, key: string, upstream: string, embeddingUrl: string | null, n: number) {
  const chat = (i: number, name: string, profile: string) => ({
    id: `b0000000-0000-4000-8000-000000000${n}${i}0`,
    slug: name,
    name,
    kind: 'chat',
    tier: 'gpu',
    model: { id: `model-${name}`, context_window: 8192 },
    upstream: { base_url: upstream, model: 'sim-chat' },
    router: { description: profile, examples: [] },
  });
  const embed = embeddingUrl
    ? [{ id: `b0000000-0000-4000-8000-000000000${n}90`, slug: 'embed', name: 'embed', kind: 'embedding', tier: 'cpu', model: { id: 'e', context_window: 8192 }, upstream: { base_url: embeddingUrl, model: 'sim-embed' } }]
    : [];
  return {
    id,
    slug,
    default_workspace: 'ws_0e0e0e',
    workspaces: [{ id: 'ws_0e0e0e', name: 'Only' }],
    endpoints: [chat(1, 'zeta', 'mathematics and calculus'), chat(2, 'alpha', 'recipes and cooking'), ...embed],
    keys: [{ value: key, scopes: ['inference', 'management'] }],
  };
}

beforeAll(async () => {
  sim = await startSimulatorProcess();
  flaky = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      void fetch(`${sim.url}/embeddings`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: Buffer.concat(chunks) }).then(async (r) => {
        res.writeHead(r.status, { 'content-type': 'application/json' }).end(Buffer.from(await r.arrayBuffer()));
      });
    });
  });
  await new Promise<void>((r) => flaky.listen(0, '127.0.0.1', r));
  const flakyUrl = `http://127.0.0.1:${(flaky.address() as AddressInfo).port}/v1`;
  gw = await startGatewayProcess(
    testConfig(sim.url, makeKeys(), {
      semanticRouter: { embedding_timeout_ms: 1000 },
      extraProjects: [
        project('proj_noembed', 'noembed', keys.noEmbed, sim.url, null, 1),
        project('proj_broken', 'broken', keys.broken, sim.url, 'http://127.0.0.1:9/v1', 2),
        project('proj_flaky', 'flaky', keys.flaky, sim.url, flakyUrl, 3),
      ],
    }),
  );
});

afterAll(async () => {
  await gw?.stop();
  await sim?.stop();
});

async function routedDecision(projectId: string, key: string): Promise<{ res: JsonResponse; row: Record<string, unknown> | undefined }> {
  const res = await call(`${gw.url}/${projectId}/_semantic/router/v1/chat/completions`, {
    key,
    body: { model: 'm', messages: [{ role: 'user', content: 'what is the integral of x squared in calculus' }] },
  });
  const list = await call(`${gw.url}/${projectId}/v1/management/semantic-router/decisions`, { key });
  const row = (list.body as { data: Record<string, unknown>[] }).data.find((d) => d.decision_request_id === res.headers.get('x-request-id'));
  return { res, row };
}

describe('failing open', () => {
  it('serves the default endpoint when the project has no embedding endpoint', async () => {
    const { res, row } = await routedDecision('proj_noembed', keys.noEmbed);
    expect(res.status).toBe(200);
    expect(res.headers.get('x-service-routed-endpoint')).toBe('alpha');
    expect(row).toMatchObject({ route_reason: 'fallback', was_fallback: true, fallback_reason: 'no_embedding_endpoint' });
    expect(row).not.toHaveProperty('similarity_score');
    const candidates = (row as { candidates: { slug: string; similarity: number | null; dropped_by: string | null }[] }).candidates;
    expect(candidates[0]).toEqual({ slug: 'alpha', similarity: null, dropped_by: null });
    expect(candidates.length).toBeGreaterThan(1);
    for (const c of candidates.slice(1)) expect(c).toMatchObject({ similarity: null, dropped_by: 'fallback' });
    const config = await call(`${gw.url}/proj_noembed/v1/management/semantic-router/config`, { key: keys.noEmbed });
    expect(config.body).toMatchObject({ embedding_endpoint: { present: false }, availability: { state: 'no_embedding_endpoint', fails_open: true } });
  });

  it('serves the default endpoint when the embedding endpoint cannot be reached', async () => {
    const { res, row } = await routedDecision('proj_broken', keys.broken);
    expect(res.status).toBe(200);
    expect(res.headers.get('x-service-routed-endpoint')).toBe('alpha');
    expect(row).toMatchObject({ route_reason: 'fallback', fallback_reason: 'similarity_unavailable' });
  });

  it("logs a routed turn's failed embedding call once, with its cause and the turn's request id", async () => {
    // Indexed while the embedding server answered; then it goes away and the query's call is refused.
    const first = await routedDecision('proj_flaky', keys.flaky);
    expect(first.row).toHaveProperty('similarity_score');
    flaky.closeAllConnections();
    await new Promise<void>((r) => flaky.close(() => r()));
    const { res, row } = await routedDecision('proj_flaky', keys.flaky);
    expect(res.status).toBe(200);
    expect(row).toMatchObject({ route_reason: 'fallback', fallback_reason: 'similarity_unavailable' });
    const id = res.headers.get('x-request-id');
    const line = await waitForLog(gw, (l) => l.request_id === id && l.level >= ERROR);
    expect(line).toMatchObject({ project: 'proj_flaky', endpoint: 'embed', msg: 'upstream server unreachable' });
    expect(String(line.cause)).toMatch(/^ECONNREFUSED /);
  });
});
