/**
 * The official `openai` client (issue 21) as a CompatClient for the shared compatibility cases:
 * chat.completions.create, streaming with include_usage, runTools with a zodFunction, parse with
 * zodResponseFormat, embeddings. The simulator's knobs ride in the `sim` body field, which the SDK sends
 * like any param it does not know.
 */
import OpenAI from 'openai';
import { zodFunction, zodResponseFormat } from 'openai/helpers/zod';
import type { ChatCompletionCreateParamsNonStreaming, ChatCompletionCreateParamsStreaming } from 'openai/resources/chat/completions';
import type { CompletionUsage } from 'openai/resources/completions';
import { Person, type CompatClient, type SimKnobs, type Target, type TokenUsage } from './compat-client.js';

const MODEL = 'compat-openai';

/** maxRetries 0: a refused call must surface at once, and one client call stays one HTTP request. */
function clientFor(target: Target): OpenAI {
  return new OpenAI({ baseURL: target.baseURL, apiKey: target.apiKey, fetch: target.fetch, maxRetries: 0 });
}

/** The SDK forwards params it does not know, so the knobs go in the body as the simulator reads them. */
function withSim<T extends object>(params: T, knobs: SimKnobs | undefined): T {
  return knobs ? Object.assign({}, params, { sim: knobs }) : params;
}

function tokenUsage(usage: CompletionUsage | null | undefined): TokenUsage {
  return { input: usage?.prompt_tokens, output: usage?.completion_tokens, total: usage?.total_tokens };
}

export const openaiClient: CompatClient = {
  name: 'openai 6.x',
  reportsEmbeddingTokens: true,
  streamAbort: 'ends quietly',

  async chat(target, prompt, options = {}) {
    const params: ChatCompletionCreateParamsNonStreaming = {
      model: MODEL,
      messages: [{ role: 'user', content: prompt }],
      ...(options.temperature === undefined ? {} : { temperature: options.temperature }),
    };
    const completion = await clientFor(target).chat.completions.create(withSim(params, options.knobs), { signal: options.signal });
    return { text: completion.choices[0]?.message.content ?? '', usage: tokenUsage(completion.usage) };
  },

  async stream(target, prompt, options = {}) {
    const params: ChatCompletionCreateParamsStreaming = {
      model: MODEL,
      messages: [{ role: 'user', content: prompt }],
      stream: true,
      stream_options: { include_usage: true },
    };
    const stream = await clientFor(target).chat.completions.create(withSim(params, options.knobs), { signal: options.signal });
    const deltas: string[] = [];
    let usage: CompletionUsage | null | undefined;
    for await (const chunk of stream) {
      const delta = chunk.choices[0]?.delta.content ?? '';
      if (delta !== '') {
        deltas.push(delta);
        options.onDelta?.(delta);
      }
      usage = chunk.usage ?? usage;
    }
    return { deltas, usage: tokenUsage(usage) };
  },

  async toolRoundTrip(target, prompt, tool) {
    const runner = clientFor(target).chat.completions.runTools({
      model: MODEL,
      messages: [{ role: 'user', content: prompt }],
      tools: [zodFunction({ name: tool.name, description: tool.description, parameters: tool.schema, function: (input) => tool.execute(input) })],
    });
    return { text: (await runner.finalContent()) ?? '' };
  },

  async structured(target, prompt) {
    const completion = await clientFor(target).chat.completions.parse({
      model: MODEL,
      messages: [{ role: 'user', content: prompt }],
      response_format: zodResponseFormat(Person, 'person'),
    });
    const parsed = completion.choices[0]?.message.parsed;
    if (!parsed) throw new Error(`no parsed object; content was ${completion.choices[0]?.message.content}`);
    return parsed;
  },

  async embed(target, texts) {
    const response = await clientFor(target).embeddings.create({ model: MODEL, input: [...texts] });
    return { vectors: response.data.map((d) => d.embedding), tokens: response.usage.prompt_tokens };
  },

  errorDetails(error) {
    if (!(error instanceof OpenAI.APIError)) return null;
    return { status: error.status, code: typeof error.code === 'string' ? error.code : undefined, message: error.message };
  },

  isAbort(error) {
    return error instanceof OpenAI.APIUserAbortError;
  },
};
