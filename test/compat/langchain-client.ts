/**
 * LangChain (`@langchain/openai` 1 on `@langchain/core` 1) as a CompatClient for the shared compatibility
 * cases (issue 21): ChatOpenAI invoke and stream (usage_metadata), bindTools with a core tool() that
 * turns the model's calls into ToolMessages, withStructuredOutput (its default json_schema method for a
 * model name outside gpt-3 / gpt-4), OpenAIEmbeddings. The simulator's knobs go in `modelKwargs`, which
 * ChatOpenAI merges into the request body.
 */
import { AIMessageChunk, HumanMessage, type BaseMessage, type UsageMetadata } from '@langchain/core/messages';
import { tool as lcTool } from '@langchain/core/tools';
import { ChatOpenAI, OpenAIClient, OpenAIEmbeddings } from '@langchain/openai';
import { Person, type CallOptions, type CompatClient, type Target, type TokenUsage, type WeatherInput } from './compat-client.js';

/** Not gpt-*, o1-* or the like: LangChain changes parameters for names it recognises as reasoning models. */
const MODEL = 'compat-langchain';

/** maxRetries 0: LangChain's caller retries a 429 otherwise, and one call must stay one HTTP request. */
function chatModel(target: Target, options: CallOptions = {}): ChatOpenAI {
  return new ChatOpenAI({
    model: MODEL,
    apiKey: target.apiKey,
    configuration: { baseURL: target.baseURL, fetch: target.fetch },
    maxRetries: 0,
    temperature: options.temperature,
    modelKwargs: options.knobs ? { sim: { ...options.knobs } } : undefined,
  });
}

function tokenUsage(usage: UsageMetadata | undefined): TokenUsage {
  return { input: usage?.input_tokens, output: usage?.output_tokens, total: usage?.total_tokens };
}

export const langchainClient: CompatClient = {
  name: '@langchain/openai 1.x',
  reportsEmbeddingTokens: false,
  // Runnable.stream races the iterator with the signal and rejects with the signal's reason.
  streamAbort: 'throws its abort error',

  async chat(target, prompt, options = {}) {
    const message = await chatModel(target, options).invoke(prompt, { signal: options.signal });
    return { text: message.text, usage: tokenUsage(message.usage_metadata) };
  },

  async stream(target, prompt, options = {}) {
    const stream = await chatModel(target, options).stream(prompt, { signal: options.signal });
    const deltas: string[] = [];
    // Chunks concatenate into the whole message, usage_metadata included (it rides on the last chunk).
    let whole: AIMessageChunk | undefined;
    for await (const chunk of stream) {
      if (chunk.text !== '') {
        deltas.push(chunk.text);
        options.onDelta?.(chunk.text);
      }
      whole = whole ? whole.concat(chunk) : chunk;
    }
    return { deltas, usage: tokenUsage(whole?.usage_metadata) };
  },

  async toolRoundTrip(target, prompt, tool) {
    const weather = lcTool(async (input: WeatherInput) => JSON.stringify(await tool.execute(input)), {
      name: tool.name,
      description: tool.description,
      schema: tool.schema,
    });
    const model = chatModel(target).bindTools([weather]);
    const messages: BaseMessage[] = [new HumanMessage(prompt)];
    const first = await model.invoke(messages);
    messages.push(first);
    // Invoking a tool with a ToolCall yields the ToolMessage answering it (tool_call_id set).
    for (const call of first.tool_calls ?? []) messages.push(await weather.invoke(call));
    const final = await model.invoke(messages);
    return { text: final.text };
  },

  async structured(target, prompt) {
    return chatModel(target).withStructuredOutput(Person, { name: 'person' }).invoke(prompt);
  },

  async embed(target, texts) {
    const embeddings = new OpenAIEmbeddings({ model: MODEL, apiKey: target.apiKey, configuration: { baseURL: target.baseURL, fetch: target.fetch }, maxRetries: 0 });
    return { vectors: await embeddings.embedDocuments([...texts]), tokens: undefined };
  },

  // LangChain rethrows the openai client's APIError (adding lc_error_code and a troubleshooting link
  // to the message for some statuses, 429 among them), so its fields are the SDK's.
  errorDetails(error) {
    if (!(error instanceof OpenAIClient.APIError)) return null;
    return { status: error.status, code: typeof error.code === 'string' ? error.code : undefined, message: error.message };
  },

  isAbort(error) {
    return error instanceof Error && error.name === 'AbortError';
  },
};
