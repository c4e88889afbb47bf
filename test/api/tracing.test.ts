/**
 * OpenTelemetry traces (issue 34) against a real OTLP/HTTP receiver started here: a gateway with
 * `tracing:` pointed at it exports a SERVER span per request, with child spans for the routing decision
 * and the upstream attempt, GenAI attributes, the client's trace continued and carried on to the model
 * server, and no prompt or answer text anywhere in what it exports. One gateway for every case; spans
 * arrive within the short export delay the config sets, and each case waits for its own spans.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeKeys, PROJECT, testConfig } from '../helpers/configs.js';
import { call } from '../helpers/http.js';
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from '../helpers/otlp-receiver.js';
import { makeRouterKeys, ROUTER_PROJECT, routerProject } from '../helpers/router-config.js';
import { simRequests, type SimRequest } from '../helpers/simulator-log.js';
import { chunksOf, parseSse } from '../helpers/sse.js';
import { startGatewayProcess, startSimulatorProcess } from '../helpers/processes.js';
import { useProcesses } from '../helpers/suite.js';

const MATH_Q = 'compute the derivative of sin x';
const COLLECTOR_TOKEN = 'collector-token-5f2c';
const SERVER = 2;
const CLIENT = 3;

let receiver: OtlpReceiver;
beforeAll(async () => {
  receiver = await startOtlpReceiver();
});
afterAll(async () => {
  await receiver.close();
});

const suite = useProcesses(async () => {
  const keys = makeKeys();
  const routerKeys = makeRouterKeys();
  const sim = await startSimulatorProcess();
  const config = {
    ...testConfig(sim.url, keys, { extraProjects: [routerProject(sim.url, routerKeys)] }),
    tracing: { enabled: true, otlp_endpoint: receiver.url, service_name: 'switchboard-test', export_delay_ms: 20, headers_env: { 'x-collector-token': 'OTLP_TEST_TOKEN' } },
  };
  const gw = await startGatewayProcess(config, { env: { OTLP_TEST_TOKEN: COLLECTOR_TOKEN } });
  return { sim, gw, keys, routerKeys };
});

const traceId = (): string => randomBytes(16).toString('hex');
const spanId = (): string => randomBytes(8).toString('hex');
const serverSpanOf = (spans: readonly ReceivedSpan[], requestId: string): ReceivedSpan | undefined =>
  spans.find((s) => s.kind === SERVER && s.attributes['switchboard.request_id'] === requestId);

/** Waits for the request's server span (it ends last: its children were exported with it or before). */
async function spansOf(requestId: string | null): Promise<{ server: ReceivedSpan; children: ReceivedSpan[] }> {
  if (!requestId) throw new Error('the response has no x-request-id');
  const spans = await receiver.waitFor((all) => serverSpanOf(all, requestId) !== undefined);
  const server = serverSpanOf(spans, requestId) as ReceivedSpan;
  return { server, children: spans.filter((s) => s.parentSpanId === server.spanId && s.traceId === server.traceId) };
}

async function simChatCarrying(trace: string): Promise<SimRequest> {
  const found = (await simRequests(suite.sim.url, 50)).find((r) => r.path === '/v1/chat/completions' && (r.headers.traceparent ?? '').includes(trace));
  if (!found) throw new Error(`no upstream chat request carried trace ${trace}`);
  return found;
}

describe('OpenTelemetry traces over OTLP/HTTP', () => {
  it('continues the client trace through the routing decision and the upstream attempt, with GenAI attributes and no text', async () => {
    const [trace, parent] = [traceId(), spanId()];
    const res = await call(`${suite.gw.url}/${ROUTER_PROJECT}/_semantic/router/v1/chat/completions`, {
      key: suite.routerKeys.full,
      body: { model: 'client-model', messages: [{ role: 'user', content: MATH_Q }] },
      headers: { traceparent: `00-${trace}-${parent}-01`, tracestate: 'vendor=abc' },
    });
    expect(res.status).toBe(200);
    const body = res.body as { usage: { prompt_tokens: number; completion_tokens: number }; choices: { message: { content: string } }[] };
    const { server, children } = await spansOf(res.headers.get('x-request-id'));

    expect(server).toMatchObject({ traceId: trace, parentSpanId: parent, name: 'POST /:project/_semantic/router/v1/chat/completions' });
    expect(server.attributes).toMatchObject({
      'http.request.method': 'POST',
      'http.route': '/:project/_semantic/router/v1/chat/completions',
      'http.response.status_code': 200,
      'switchboard.project': ROUTER_PROJECT,
      'switchboard.endpoint': 'math',
      'gen_ai.operation.name': 'chat',
      'gen_ai.request.model': 'model-math',
      'gen_ai.response.model': 'model-math',
      'gen_ai.usage.input_tokens': body.usage.prompt_tokens,
      'gen_ai.usage.output_tokens': body.usage.completion_tokens,
    });
    expect(server.attributes['switchboard.key_id']).toEqual(expect.any(String));
    expect(server.resource).toMatchObject({ 'service.name': 'switchboard-test' });

    const routing = children.find((s) => s.name === 'switchboard.route');
    expect(routing?.attributes).toMatchObject({ 'switchboard.routing.endpoint': 'math', 'switchboard.routing.model': 'model-math', 'switchboard.routing.reason': expect.any(String) });
    const attempt = children.find((s) => s.kind === CLIENT);
    expect(attempt).toMatchObject({ name: 'chat sim-chat' });
    expect(attempt?.attributes).toMatchObject({ 'gen_ai.operation.name': 'chat', 'gen_ai.request.model': 'sim-chat', 'http.response.status_code': 200, 'server.address': '127.0.0.1', 'switchboard.attempt': 1 });

    // The model server got the trace on, under the attempt's span, with the client's tracestate.
    const upstream = await simChatCarrying(trace);
    expect(upstream.headers.traceparent).toBe(`00-${trace}-${attempt?.spanId}-01`);
    expect(upstream.headers.tracestate).toBe('vendor=abc');

    const exported = receiver.bodies.join('\n');
    expect(exported).not.toContain(MATH_Q);
    expect(exported).not.toContain(body.choices[0]?.message.content);
    expect(exported).not.toContain(suite.routerKeys.full);
    expect(receiver.headers.every((h) => h['x-collector-token'] === COLLECTOR_TOKEN)).toBe(true);
  });

  it('starts a new trace without a traceparent and ends a streamed request span when the stream ends', async () => {
    const res = await fetch(`${suite.gw.url}/${PROJECT}/chat/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${suite.keys.full}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'm', stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: 'hello there' }] }),
    });
    const chunks = chunksOf(parseSse(await res.text()));
    const usage = chunks.at(-1)?.usage as { prompt_tokens: number; completion_tokens: number };
    const { server, children } = await spansOf(res.headers.get('x-request-id'));
    expect(server.parentSpanId).toBe('');
    // The output token count is known only once the stream is over: the span ended after it.
    expect(server.attributes).toMatchObject({ 'switchboard.endpoint': 'chat', 'gen_ai.request.model': 'model-chat', 'gen_ai.usage.output_tokens': usage.completion_tokens });
    const attempt = children.find((s) => s.kind === CLIENT);
    expect((await simChatCarrying(server.traceId)).headers.traceparent).toBe(`00-${server.traceId}-${attempt?.spanId}-01`);
  });

  it('records nothing of an unsampled client trace but still carries it upstream', async () => {
    const [trace, parent] = [traceId(), spanId()];
    const chatUrl = `${suite.gw.url}/${PROJECT}/chat/v1/chat/completions`;
    const turn = { model: 'm', messages: [{ role: 'user', content: 'hi' }] };
    expect((await call(chatUrl, { key: suite.keys.full, body: turn, headers: { traceparent: `00-${trace}-${parent}-00` } })).status).toBe(200);
    expect((await simChatCarrying(trace)).headers.traceparent).toMatch(new RegExp(`^00-${trace}-[0-9a-f]{16}-00$`));
    // A sampled request after it: once its spans are in, the unsampled one's would have been too.
    const after = await call(chatUrl, { key: suite.keys.full, body: turn });
    await spansOf(after.headers.get('x-request-id'));
    expect(receiver.spans.filter((s) => s.traceId === trace)).toEqual([]);
  });

  it('names a refusal on the server span by its error code, without marking a 4xx as a span error', async () => {
    const res = await call(`${suite.gw.url}/${PROJECT}/chat/v1/chat/completions`, { key: suite.keys.full, body: { model: 'm', messages: [] } });
    expect(res.status).toBe(400);
    const { server, children } = await spansOf(res.headers.get('x-request-id'));
    expect(server.attributes).toMatchObject({ 'http.response.status_code': 400, 'error.type': 'invalid_request' });
    expect(server.status.code ?? 0).toBe(0);
    expect(children).toEqual([]);
  });
});
