/**
 * The official `openai` client against a real gateway and simulator: SPEC "What the service does" 1 says an
 * existing client library works when only the base address and key change. Nothing here is mocked.
 */
import OpenAI from 'openai';
import type {
  ChatCompletionChunk,
  ChatCompletionCreateParamsNonStreaming,
  ChatCompletionCreateParamsStreaming,
  ChatCompletionMessageFunctionToolCall,
  ChatCompletionMessageParam,
  ChatCompletionTool,
} from 'openai/resources/chat/completions';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_CONTENT_TOKENS, DEFAULT_REASONING_TOKENS } from '../../src/simulator/chat-completion.js';
import { makeKeys, PROJECT, testConfig, type TestKeys } from '../helpers/configs.js';
import { startGatewayProcess, startSimulatorProcess, type GatewayProcess, type SimulatorProcess } from '../helpers/processes.js';

let sim: SimulatorProcess;
let gw: GatewayProcess;
let keys: TestKeys;
let chat: OpenAI;
let reasoner: OpenAI;

const clientFor = (slug: string, apiKey = keys.full): OpenAI =>
  new OpenAI({ baseURL: `${gw.url}/${PROJECT}/${slug}/v1`, apiKey, maxRetries: 0 });

beforeAll(async () => {
  keys = makeKeys();
  sim = await startSimulatorProcess();
  gw = await startGatewayProcess(testConfig(sim.url, keys));
  chat = clientFor('chat');
  reasoner = clientFor('reasoner');
});

afterAll(async () => {
  await gw?.stop();
  await sim?.stop();
});

/** Adds the simulator's `sim` knobs as an extra body field, which the gateway passes through untouched. */
function withSim<T extends object>(params: T, knobs: Record<string, unknown>): T {
  return Object.assign({}, params, { sim: knobs });
}

/** Extra, non-SDK properties of a response object (reasoning fields, x_adjusted_reasoning_effort). */
function extras(value: object): Record<string, unknown> {
  return value as Record<string, unknown>;
}

const ID = /^chatcmpl-[0-9a-f]{24}$/;
const ask = (content: string, model = 'my-client-model'): ChatCompletionCreateParamsNonStreaming => ({
  model,
  messages: [{ role: 'user', content }],
});

describe('non-streaming completions through the openai client', () => {
  it('returns a stop-finished answer whose id, model echo and usage follow SPEC', async () => {
    const completion = await chat.chat.completions.create(ask('Tell me about switchboards', 'whatever-the-client-says'));
    expect(completion.id).toMatch(ID);
    expect(completion.object).toBe('chat.completion');
    expect(completion.model).toBe('whatever-the-client-says');
    const [choice] = completion.choices;
    expect(completion.choices).toHaveLength(1);
    expect(choice?.finish_reason).toBe('stop');
    expect(choice?.message.role).toBe('assistant');
    expect(typeof choice?.message.content).toBe('string');
    // The simulator's default answer: 16 one-token words; the prompt, ceil(26 bytes / 4) + 3 per message.
    expect(choice?.message.content?.split(' ')).toHaveLength(DEFAULT_CONTENT_TOKENS);
    expect(completion.usage).toMatchObject({ prompt_tokens: 10, completion_tokens: DEFAULT_CONTENT_TOKENS, total_tokens: 10 + DEFAULT_CONTENT_TOKENS });
    expect(completion.service_tier).toBe('default');
    expect(completion.system_fingerprint).toBeNull();
    expect(choice?.message.refusal).toBeNull();
    expect(choice?.message.annotations).toEqual([]);
    expect(choice?.logprobs).toBeNull();
  });

  it('sends an X-Request-ID header equal to the body id, seen through withResponse()', async () => {
    const { data, response } = await chat.chat.completions.create(ask('which id do I get')).withResponse();
    expect(data.id).toMatch(ID);
    expect(response.headers.get('x-request-id')).toBe(data.id);
  });

  it('exposes the same header on asResponse(), with a JSON body carrying that id', async () => {
    const response = await chat.chat.completions.create(ask('raw response please')).asResponse();
    expect(response.status).toBe(200);
    const body = (await response.json()) as { id: string };
    expect(response.headers.get('x-request-id')).toBe(body.id);
  });
});

describe('streaming through the openai client', () => {
  it('streams chunks that reassemble the non-streamed answer and end with a usage-only chunk', async () => {
    const params = ask('stream this deterministic answer');
    const whole = await chat.chat.completions.create({ ...params, seed: 7 });
    const streamParams: ChatCompletionCreateParamsStreaming = { ...params, seed: 7, stream: true, stream_options: { include_usage: true } };
    const stream = await chat.chat.completions.create(streamParams);

    const chunks: ChatCompletionChunk[] = [];
    for await (const chunk of stream) chunks.push(chunk);

    const content = chunks.map((c) => c.choices[0]?.delta.content ?? '').join('');
    expect(content).toBe(whole.choices[0]?.message.content);
    const finish = chunks.map((c) => c.choices[0]?.finish_reason).filter((f) => f !== null && f !== undefined);
    expect(finish).toEqual(['stop']);

    const last = chunks.at(-1);
    expect(last?.choices).toEqual([]);
    expect(last?.usage?.completion_tokens).toBe(whole.usage?.completion_tokens);
    expect(last?.usage?.prompt_tokens).toBe(whole.usage?.prompt_tokens);
    expect(chunks.slice(0, -1).every((c) => c.usage === undefined || c.usage === null)).toBe(true);

    const id = chunks[0]?.id;
    expect(id).toMatch(ID);
    expect(id).not.toBe(whole.id);
    for (const chunk of chunks) {
      expect(chunk.id).toBe(id);
      expect(chunk.object).toBe('chat.completion.chunk');
      expect(chunk.model).toBe('my-client-model');
      expect(chunk.service_tier).toBe('default');
      expect('system_fingerprint' in chunk).toBe(false);
    }
  });

  it('lets the SDK stream helper accumulate the same message as the non-streamed answer', async () => {
    const params = ask('accumulate me with the helper');
    const whole = await chat.chat.completions.create(params);
    const runner = chat.chat.completions.stream({ model: params.model, messages: params.messages, stream_options: { include_usage: true } });
    const deltas: string[] = [];
    runner.on('content', (delta) => deltas.push(delta));
    const final = await runner.finalChatCompletion();
    expect(final.choices[0]?.message.content).toBe(whole.choices[0]?.message.content);
    expect(final.choices[0]?.finish_reason).toBe('stop');
    expect(deltas.join('')).toBe(whole.choices[0]?.message.content);
    expect(final.usage?.total_tokens).toBe(whole.usage?.total_tokens);
  });

  it('reports the stream id in X-Request-ID before the first chunk', async () => {
    const { data: stream, response } = await chat.chat.completions
      .create({ ...ask('stream with headers'), stream: true })
      .withResponse();
    const ids = new Set<string>();
    for await (const chunk of stream) ids.add(chunk.id);
    expect([...ids]).toEqual([response.headers.get('x-request-id')]);
  });
});

describe('tool calling round trip', () => {
  const tools: ChatCompletionTool[] = [
    {
      type: 'function',
      function: {
        name: 'get_weather',
        description: 'Current weather for a city',
        parameters: {
          type: 'object',
          properties: { city: { type: 'string' }, unit: { type: 'string', enum: ['celsius', 'fahrenheit'] }, days: { type: 'integer' } },
          required: ['city'],
        },
      },
    },
  ];

  it('returns a function call, then answers with content once the tool result is sent back', async () => {
    const messages: ChatCompletionMessageParam[] = [{ role: 'user', content: 'What is the weather in Paris?' }];
    const first = await chat.chat.completions.create({ model: 'agent', messages, tools });
    const choice = first.choices[0];
    expect(choice?.finish_reason).toBe('tool_calls');
    expect(choice?.message.content).toBeNull();
    const calls = choice?.message.tool_calls ?? [];
    expect(calls).toHaveLength(1);
    const call = calls[0] as ChatCompletionMessageFunctionToolCall;
    expect(call.type).toBe('function');
    expect(call.id).toMatch(/^call_/);
    expect(call.function.name).toBe('get_weather');
    expect(JSON.parse(call.function.arguments)).toEqual({ city: 'sample', unit: 'celsius', days: 1 });

    const second = await chat.chat.completions.create({
      model: 'agent',
      tools,
      messages: [
        ...messages,
        { role: 'assistant', content: null, tool_calls: [call] },
        { role: 'tool', tool_call_id: call.id, content: JSON.stringify({ temperature_c: 21 }) },
      ],
    });
    expect(second.choices[0]?.finish_reason).toBe('stop');
    expect(second.choices[0]?.message.tool_calls ?? null).toBeNull();
    expect(second.choices[0]?.message.content).toMatch(/^Tool result received:/);
  });
});

describe('reasoning through the reasoner endpoint', () => {
  it('carries the reasoning on message.reasoning_content and an identical message.reasoning', async () => {
    const completion = await reasoner.chat.completions.create(ask('Think before answering'));
    const message = extras(completion.choices[0]?.message ?? {});
    expect(typeof message.reasoning_content).toBe('string');
    expect((message.reasoning_content as string).split(' ')).toHaveLength(DEFAULT_REASONING_TOKENS);
    expect(message.reasoning).toBe(message.reasoning_content);
    expect(completion.choices[0]?.message.content?.split(' ')).toHaveLength(DEFAULT_CONTENT_TOKENS);
    expect(completion.usage?.completion_tokens_details?.reasoning_tokens).toBe(DEFAULT_REASONING_TOKENS);
  });

  it('maps reasoning_effort xhigh onto the model\'s highest level and reports x_adjusted_reasoning_effort high', async () => {
    const completion = await reasoner.chat.completions.create({ ...ask('Think very hard'), reasoning_effort: 'xhigh' });
    expect(extras(completion).x_adjusted_reasoning_effort).toBe('high');
  });

  it('streams reasoning deltas on reasoning_content ahead of the first content delta', async () => {
    const stream = await reasoner.chat.completions.create({ ...ask('Think while streaming'), stream: true });
    const kinds: string[] = [];
    for await (const chunk of stream) {
      const delta = extras(chunk.choices[0]?.delta ?? {});
      if (typeof delta.reasoning_content === 'string') {
        expect(delta.reasoning).toBe(delta.reasoning_content);
        kinds.push('reasoning');
      }
      if (typeof delta.content === 'string' && delta.content !== '') kinds.push('content');
    }
    expect(kinds).toContain('reasoning');
    expect(kinds).toContain('content');
    expect(kinds.lastIndexOf('reasoning')).toBeLessThan(kinds.indexOf('content'));
  });
});

describe('logprobs', () => {
  it('returns one logprobs entry per content token, each with the requested number of alternatives', async () => {
    const completion = await chat.chat.completions.create(withSim({ ...ask('score every token'), logprobs: true, top_logprobs: 2 }, { tokens: 6 }));
    const choice = completion.choices[0];
    const entries = choice?.logprobs?.content ?? [];
    expect(entries).toHaveLength(6);
    expect(entries.map((e) => e.token).join('')).toBe(choice?.message.content);
    expect(completion.usage?.completion_tokens).toBe(6);
    for (const entry of entries) {
      expect(entry.top_logprobs).toHaveLength(2);
      expect(entry.logprob).toBeLessThanOrEqual(0);
    }
  });
});

describe('errors through the openai client', () => {
  it('throws BadRequestError with param temperature for temperature 5', async () => {
    const err = await chat.chat.completions.create({ ...ask('too hot'), temperature: 5 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    expect(err).toBeInstanceOf(OpenAI.APIError);
    const apiError = err as InstanceType<typeof OpenAI.BadRequestError>;
    expect(apiError.status).toBe(400);
    expect(apiError.code).toBe('invalid_request');
    expect(apiError.type).toBe('invalid_request_error');
    expect(apiError.param).toBe('temperature');
    expect(apiError.requestID).toMatch(ID);
  });

  it('throws AuthenticationError with code invalid_api_key for a key that was never minted', async () => {
    const stranger = clientFor('chat', `svc_test_${'A'.repeat(43)}`);
    const err = await stranger.chat.completions.create(ask('who am I')).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.AuthenticationError);
    const apiError = err as InstanceType<typeof OpenAI.AuthenticationError>;
    expect(apiError.status).toBe(401);
    expect(apiError.code).toBe('invalid_api_key');
  });

  it('throws InternalServerError with code internal_error when the upstream answers 500', async () => {
    const err = await chat.chat.completions.create(withSim(ask('fail upstream'), { error_status: 500 })).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.InternalServerError);
    const apiError = err as InstanceType<typeof OpenAI.InternalServerError>;
    expect(apiError.status).toBe(500);
    expect(apiError.code).toBe('internal_error');
  });

  it('accepts the sim knobs through the SDK body option as well', async () => {
    const err = await chat.chat.completions
      .create(ask('fail upstream via options'), { body: { ...ask('fail upstream via options'), sim: { error_status: 500 } } })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.InternalServerError);
    expect((err as InstanceType<typeof OpenAI.InternalServerError>).code).toBe('internal_error');
  });

  it('makes stream iteration throw an APIError when the upstream connection dies mid-stream', async () => {
    const stream = await chat.chat.completions.create(withSim({ ...ask('die midway'), stream: true }, { fail_after: 2, tokens: 10 }));
    let content = '';
    const iterate = async (): Promise<void> => {
      for await (const chunk of stream) content += chunk.choices[0]?.delta.content ?? '';
    };
    const err = await iterate().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.APIError);
    expect(content.split(' ').filter((w) => w !== '')).toHaveLength(2);
  });
});

describe('models through the openai client', () => {
  it('lists exactly the endpoint\'s model on the endpoint base URL', async () => {
    const ids: string[] = [];
    for await (const model of chat.models.list()) ids.push(model.id);
    expect(ids).toEqual(['model-chat']);
    const reasonerIds: string[] = [];
    for await (const model of reasoner.models.list()) reasonerIds.push(model.id);
    expect(reasonerIds).toEqual(['acme/model-reasoner']);
  });
});
