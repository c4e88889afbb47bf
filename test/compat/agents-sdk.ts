/**
 * The OpenAI Agents SDK (`@openai/agents` 0.20) as a self-hosted user points it at the gateway (issue 34):
 * an OpenAIProvider with the gateway's base URL and key, tracing off (it would otherwise export traces to
 * OpenAI), and one Agent with one function tool, run by the SDK's own Runner on the Responses API or on
 * chat completions, streamed or not. The SDK runs the tool the model calls and sends its result back.
 */
import { Agent, OpenAIProvider, Runner, setTracingDisabled, tool } from '@openai/agents';
import { WeatherInput } from './compat-client.js';

export type AgentsApi = 'responses' | 'chat_completions';

export interface AgentRunResult {
  readonly finalOutput: string;
  /** What the tool was called with, in order. */
  readonly toolInputs: readonly WeatherInput[];
  /** Every URL the run fetched (the gateway's, and nothing else when tracing is off). */
  readonly fetched: readonly string[];
}

export interface AgentRunOptions {
  readonly baseURL: string;
  readonly apiKey: string;
  readonly model: string;
  readonly api: AgentsApi;
  readonly stream: boolean;
  readonly prompt: string;
  /** The tool's answer, so the case can find it in what reached the model. */
  readonly forecast: string;
}

/** Records every fetch made while `run` is pending: the SDK's client and its tracing exporter use the global fetch. */
async function recordingFetches<T>(run: () => Promise<T>): Promise<{ value: T; fetched: string[] }> {
  const fetched: string[] = [];
  const original = globalThis.fetch;
  globalThis.fetch = (input, init) => {
    fetched.push(input instanceof Request ? input.url : String(input));
    return original(input, init);
  };
  try {
    return { value: await run(), fetched };
  } finally {
    globalThis.fetch = original;
  }
}

export async function runAgent(options: AgentRunOptions): Promise<AgentRunResult> {
  // The SDK's default exports traces to api.openai.com; a self-hosted user turns that off.
  setTracingDisabled(true);
  const toolInputs: WeatherInput[] = [];
  const weather = tool({
    name: 'get_weather',
    description: 'Current weather for a city',
    parameters: WeatherInput,
    execute: async (input) => {
      toolInputs.push(input);
      return { forecast: options.forecast };
    },
  });
  const agent = new Agent({ name: 'Forecaster', instructions: 'Answer weather questions with the get_weather tool.', model: options.model, tools: [weather] });
  const provider = new OpenAIProvider({ baseURL: options.baseURL, apiKey: options.apiKey, useResponses: options.api === 'responses' });
  const runner = new Runner({ modelProvider: provider, tracingDisabled: true });
  const { value, fetched } = await recordingFetches(async () => {
    if (!options.stream) return (await runner.run(agent, options.prompt)).finalOutput;
    const streamed = await runner.run(agent, options.prompt, { stream: true });
    // Read the events to the end, as an application rendering them would.
    for await (const _event of streamed) void _event;
    await streamed.completed;
    return streamed.finalOutput;
  });
  return { finalOutput: String(value ?? ''), toolInputs, fetched };
}
