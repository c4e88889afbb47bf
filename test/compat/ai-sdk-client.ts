/**
 * The Vercel AI SDK (`ai` 6 with `@ai-sdk/openai-compatible` 2) as a CompatClient for the shared
 * compatibility cases (issue 21): generateText, streamText, a tool() with a zod schema run by the SDK's own
 * step loop, structured output, embedMany. Structured output uses generateText with `output:
 * Output.object`, which ai 6 recommends over the deprecated generateObject; both send the same
 * json_schema response_format. The simulator's knobs go in providerOptions, whose unknown keys the
 * provider spreads into the body.
 */
import { createOpenAICompatible, type OpenAICompatibleProvider } from '@ai-sdk/openai-compatible';
import { APICallError, embedMany, generateText, Output, stepCountIs, streamText, tool as aiTool, type LanguageModelUsage } from 'ai';
import { Person, type CallOptions, type CompatClient, type Target, type TokenUsage } from './compat-client.js';

const MODEL = 'compat-ai-sdk';
/** The provider name, which is also its providerOptions key. */
const PROVIDER = 'switchboard';

function providerFor(target: Target): OpenAICompatibleProvider {
  return createOpenAICompatible({
    name: PROVIDER,
    baseURL: target.baseURL,
    apiKey: target.apiKey,
    fetch: target.fetch,
    // Without it the provider sends no stream_options, and a stream reports no usage.
    includeUsage: true,
    // Without it the provider downgrades a schema to json_object and the schema never reaches the model.
    supportsStructuredOutputs: true,
  });
}

/** maxRetries 0 on every call: a refused call must surface at once, one call staying one HTTP request. */
function callSettings(options: CallOptions) {
  return {
    maxRetries: 0,
    abortSignal: options.signal,
    temperature: options.temperature,
    providerOptions: options.knobs ? { [PROVIDER]: { sim: { ...options.knobs } } } : undefined,
  };
}

function tokenUsage(usage: LanguageModelUsage): TokenUsage {
  return { input: usage.inputTokens, output: usage.outputTokens, total: usage.totalTokens };
}

/** The code of the parsed `{error: {code}}` body an APICallError carries in `data`. */
function errorCode(data: unknown): string | undefined {
  if (typeof data !== 'object' || data === null || !('error' in data)) return undefined;
  const { error } = data;
  if (typeof error !== 'object' || error === null || !('code' in error)) return undefined;
  return typeof error.code === 'string' ? error.code : undefined;
}

export const aiSdkClient: CompatClient = {
  name: 'ai 6.x with @ai-sdk/openai-compatible 2.x',
  reportsEmbeddingTokens: true,
  // streamText turns an abort into an `abort` part and closes the stream (its onAbort callback).
  streamAbort: 'ends quietly',

  async chat(target, prompt, options = {}) {
    const result = await generateText({ model: providerFor(target)(MODEL), prompt, ...callSettings(options) });
    return { text: result.text, usage: tokenUsage(result.usage) };
  },

  async stream(target, prompt, options = {}) {
    const result = streamText({ model: providerFor(target)(MODEL), prompt, ...callSettings(options) });
    const deltas: string[] = [];
    let usage: LanguageModelUsage | undefined;
    // fullStream, not textStream: textStream drops `error` parts, which would hide a failed stream.
    for await (const part of result.fullStream) {
      if (part.type === 'text-delta' && part.text !== '') {
        deltas.push(part.text);
        options.onDelta?.(part.text);
      } else if (part.type === 'error') {
        throw part.error;
      } else if (part.type === 'finish') {
        usage = part.totalUsage;
      }
    }
    return { deltas, usage: usage ? tokenUsage(usage) : { input: undefined, output: undefined, total: undefined } };
  },

  async toolRoundTrip(target, prompt, tool) {
    const result = await generateText({
      model: providerFor(target)(MODEL),
      prompt,
      maxRetries: 0,
      tools: { [tool.name]: aiTool({ description: tool.description, inputSchema: tool.schema, execute: (input) => tool.execute(input) }) },
      // Step one calls the tool, step two answers with its result; a third step would mean a loop.
      stopWhen: stepCountIs(2),
    });
    return { text: result.text };
  },

  async structured(target, prompt) {
    const result = await generateText({ model: providerFor(target)(MODEL), prompt, maxRetries: 0, output: Output.object({ schema: Person, name: 'person' }) });
    return result.output;
  },

  async embed(target, texts) {
    const result = await embedMany({ model: providerFor(target).embeddingModel(MODEL), values: [...texts], maxRetries: 0 });
    return { vectors: result.embeddings, tokens: result.usage.tokens };
  },

  errorDetails(error) {
    if (!APICallError.isInstance(error)) return null;
    return { status: error.statusCode, code: errorCode(error.data), message: error.message };
  },

  isAbort(error) {
    return error instanceof Error && error.name === 'AbortError';
  },
};
