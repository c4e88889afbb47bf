import { describe, expect, it } from 'vitest';
import { createMetrics } from '../../src/metrics.js';

const lines = async (m: ReturnType<typeof createMetrics>, prefix: string): Promise<string[]> =>
  (await m.registry.metrics()).split('\n').filter((l) => l.startsWith(prefix));

describe('request metrics, recorded as plain numbers and rendered at scrape', () => {
  it('render a cumulative histogram per family with +Inf, sum and count', async () => {
    const m = createMetrics(() => 0, () => 0);
    m.requestStarted('chat');
    m.requestFinished('chat', 200, 0.004, 0.003);
    m.requestStarted('chat');
    m.requestFinished('chat', 200, 0.3, undefined);
    const out = await lines(m, 'switchboard_request_duration_seconds');
    expect(out).toContain('switchboard_request_duration_seconds_bucket{le="0.0025",family="chat"} 0');
    expect(out).toContain('switchboard_request_duration_seconds_bucket{le="0.005",family="chat"} 1');
    expect(out).toContain('switchboard_request_duration_seconds_bucket{le="0.5",family="chat"} 2');
    expect(out).toContain('switchboard_request_duration_seconds_bucket{le="+Inf",family="chat"} 2');
    expect(out).toContain('switchboard_request_duration_seconds_sum{family="chat"} 0.304');
    expect(out).toContain('switchboard_request_duration_seconds_count{family="chat"} 2');
    expect(await lines(m, 'switchboard_upstream_duration_seconds_count')).toEqual(['switchboard_upstream_duration_seconds_count{family="chat"} 1']);
  });

  it('count a value equal to a bound in that bound, as Prometheus buckets do', async () => {
    const m = createMetrics(() => 0, () => 0);
    m.requestFinished('models', 200, 0.005, undefined);
    expect(await lines(m, 'switchboard_request_duration_seconds_bucket{le="0.005"')).toEqual(['switchboard_request_duration_seconds_bucket{le="0.005",family="models"} 1']);
  });

  it('keep counting requests by family and status across scrapes, and track requests in flight', async () => {
    const m = createMetrics(() => 0, () => 0);
    m.requestStarted('chat');
    m.requestStarted('chat');
    m.requestFinished('chat', 429, 0.001, undefined);
    expect(await lines(m, 'switchboard_requests_')).toEqual([
      'switchboard_requests_total{family="chat",status="429"} 1',
      'switchboard_requests_in_flight{family="chat"} 1',
    ]);
    m.requestFinished('chat', 429, 0.001, undefined);
    expect(await lines(m, 'switchboard_requests_')).toEqual([
      'switchboard_requests_total{family="chat",status="429"} 2',
      'switchboard_requests_in_flight{family="chat"} 0',
    ]);
  });
});

describe('per-endpoint metrics', () => {
  const chat = { project: 'proj_a', endpoint: 'chat', model: 'acme/chat' };
  it('count requests by endpoint, model and status, tokens by kind, and time to first token', async () => {
    const m = createMetrics(() => 0, () => 0);
    m.endpointFinished(chat, 200, 0.01, 0.002);
    m.endpointFinished(chat, 429, undefined, undefined);
    m.tokensBilled(chat, 10, 5, 2);
    m.tokensBilled(chat, 1, 1, 0);
    expect(await lines(m, 'switchboard_endpoint_requests_total')).toEqual([
      'switchboard_endpoint_requests_total{project="proj_a",endpoint="chat",model="acme/chat",status="200"} 1',
      'switchboard_endpoint_requests_total{project="proj_a",endpoint="chat",model="acme/chat",status="429"} 1',
    ]);
    expect(await lines(m, 'switchboard_tokens_total')).toEqual([
      'switchboard_tokens_total{project="proj_a",endpoint="chat",model="acme/chat",kind="prompt"} 11',
      'switchboard_tokens_total{project="proj_a",endpoint="chat",model="acme/chat",kind="completion"} 6',
      'switchboard_tokens_total{project="proj_a",endpoint="chat",model="acme/chat",kind="cached"} 2',
    ]);
    expect(await lines(m, 'switchboard_time_to_first_token_seconds_count')).toEqual(['switchboard_time_to_first_token_seconds_count{project="proj_a",endpoint="chat",model="acme/chat"} 1']);
    expect(await lines(m, 'switchboard_endpoint_upstream_duration_seconds_count')).toEqual(['switchboard_endpoint_upstream_duration_seconds_count{project="proj_a",endpoint="chat",model="acme/chat"} 1']);
  });
});
