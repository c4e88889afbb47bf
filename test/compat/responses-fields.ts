/**
 * The Responses fields OpenAI's clients send, field by field (docs/decisions.md "Responses fields the
 * gateway honours", issue 34): each is applied, passed to the model server, or refused by name when only
 * OpenAI's hosting could serve it. Raw HTTP on the compatibility suite's gateway, so each case sees the
 * exact body and the exact chat turn the simulator received.
 */
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { PROJECT } from '../helpers/configs.js';
import { call, type JsonResponse } from '../helpers/http.js';
import { simRequests } from '../helpers/simulator-log.js';
import { parseSse } from '../helpers/sse.js';
import type { CompatSuite } from './compat-suite.js';

type Json = Record<string, unknown>;

function expectRefusal(res: JsonResponse, code: string, param: string): void {
  expect({ status: res.status, body: res.body }).toMatchObject({ status: 400, body: { error: { code, param } } });
}

export function runResponsesFieldCases(suite: CompatSuite): void {
  const url = (): string => `${suite.gw.url}/${PROJECT}/v1/responses`;
  const create = (body: Json): Promise<JsonResponse> => call(url(), { key: suite.keys.full, body: { model: 'model-chat', ...body } });
  /** The chat turn that carried `nonce`, as the simulator received it. */
  const upstreamWith = async (nonce: string): Promise<Json> => {
    const found = (await simRequests(suite.sim.url, 20)).find((r) => r.body.includes(nonce));
    if (!found) throw new Error('no upstream turn carried the nonce');
    return JSON.parse(found.body) as Json;
  };

  describe('Responses fields of OpenAI clients', () => {
    it("accepts Codex's own fields and offers a namespace's functions as functions, answering a call with its namespace", async () => {
      const nonce = randomBytes(6).toString('hex');
      const res = await create({
        input: [{ type: 'message', role: 'user', content: [{ type: 'input_text', text: `close it ${nonce} [call: close_agent {"target":"a1"}]` }] }],
        tools: [
          { type: 'function', name: 'exec_command', strict: false, parameters: { type: 'object', properties: { cmd: { type: 'string' } } } },
          { type: 'namespace', name: 'multi_agent_v1', description: 'Sub-agents', tools: [{ type: 'function', name: 'close_agent', strict: false, parameters: { type: 'object', properties: { target: { type: 'string' } } } }] },
        ],
        tool_choice: 'auto',
        parallel_tool_calls: true,
        reasoning: { summary: 'auto' },
        store: false,
        include: ['reasoning.encrypted_content'],
        prompt_cache_key: `thread-${nonce}`,
        client_metadata: { session_id: nonce },
      });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      const body = res.body as Json;
      expect(body.output).toEqual([expect.objectContaining({ type: 'function_call', name: 'close_agent', namespace: 'multi_agent_v1', arguments: '{"target":"a1"}' })]);
      const upstream = await upstreamWith(nonce);
      expect((upstream.tools as Json[]).map((t) => (t.function as Json).name)).toEqual(['exec_command', 'close_agent']);
      expect(upstream.prompt_cache_key).toBe(`thread-${nonce}`);
      // Codex's telemetry and the include list stay in the gateway.
      expect(upstream).not.toHaveProperty('client_metadata');
      expect(upstream).not.toHaveProperty('include');
    });

    it('applies include logprobs with top_logprobs, passes safety_identifier and service_tier on, and echoes them', async () => {
      const nonce = randomBytes(6).toString('hex');
      const res = await create({
        input: `echo: three words ${nonce}`,
        include: ['message.output_text.logprobs'],
        top_logprobs: 2,
        safety_identifier: `user-${nonce}`,
        service_tier: 'flex',
        max_tool_calls: 3,
      });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      const body = res.body as Json & { output: { content: { text: string; logprobs: { token: string; top_logprobs: unknown[] }[] }[] }[] };
      const part = body.output[0]?.content[0];
      expect(part?.text).toBe(`three words ${nonce}`);
      expect(part?.logprobs.map((l) => l.token)).toEqual(['three', ' words', ` ${nonce}`]);
      expect(part?.logprobs.every((l) => l.top_logprobs.length === 2)).toBe(true);
      expect(body).toMatchObject({ service_tier: 'flex', safety_identifier: `user-${nonce}`, top_logprobs: 2, max_tool_calls: 3 });
      expect(body.usage).toMatchObject({ input_tokens_details: { cached_tokens: 0, cache_write_tokens: 0 } });
      const upstream = await upstreamWith(nonce);
      expect(upstream).toMatchObject({ logprobs: true, top_logprobs: 2, safety_identifier: `user-${nonce}`, service_tier: 'flex' });
    });

    it('streams logprobs on each delta and reports cache_write_tokens in response.completed', async () => {
      const nonce = randomBytes(6).toString('hex');
      const res = await fetch(url(), {
        method: 'POST',
        headers: { authorization: `Bearer ${suite.keys.full}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'model-chat', input: `echo: two ${nonce}`, stream: true, include: ['message.output_text.logprobs'], stream_options: { include_obfuscation: false } }),
      });
      expect(res.status).toBe(200);
      const events = parseSse(await res.text()).map((f) => JSON.parse(f.data) as Json);
      const deltas = events.filter((e) => e.type === 'response.output_text.delta');
      expect(deltas.map((d) => (d.logprobs as { token: string }[]).map((l) => l.token))).toEqual([['two'], [` ${nonce}`]]);
      const completed = events.find((e) => e.type === 'response.completed')?.response as Json;
      expect(completed.usage).toMatchObject({ input_tokens_details: { cached_tokens: 0, cache_write_tokens: 0 } });
    });

    it('refuses what only OpenAI can serve, by name: hosted prompts, unknown include values, hosted tools in or out of a namespace', async () => {
      expectRefusal(await create({ input: 'x', prompt: { id: 'pmpt_1' } }), 'unsupported_parameter', 'prompt');
      expectRefusal(await create({ input: 'x', include: ['reasoning.encrypted_content', 'no.such.thing'] }), 'unsupported_value', 'include[1]');
      expectRefusal(await create({ input: 'x', tools: [{ type: 'web_search' }] }), 'unsupported_value', 'tools[0].type');
      expectRefusal(await create({ input: 'x', tools: [{ type: 'namespace', name: 'n', description: 'd', tools: [{ type: 'custom', name: 'c' }] }] }), 'unsupported_value', 'tools[0].tools[0].type');
      const twice = { type: 'function', name: 'f', parameters: { type: 'object', properties: {} } };
      expectRefusal(await create({ input: 'x', tools: [twice, { type: 'namespace', name: 'n', description: 'd', tools: [twice] }] }), 'invalid_request', 'tools[1].tools[0].name');
    });
  });
}
