import { invalidRequest } from './errors.js';
import { isInteger, isRecord, type JsonRecord } from './json.js';
import { scriptedCall, type ScriptedCall } from './scripted.js';

// Validates just enough of a chat request to plan a turn. Unknown fields are
// ignored (like vLLM) so gateway-added extras never break the simulator.

export interface ToolSpec {
  name: string;
  /** The tool's JSON-schema `parameters`, used to fill in sample arguments. */
  parameters: unknown;
}

export type ToolChoice = 'none' | 'auto' | 'required' | { name: string };

export interface ChatRequestView {
  model: string;
  stream: boolean;
  includeUsage: boolean;
  n: number;
  /** max_completion_tokens if given, else max_tokens, else null (unbounded). */
  maxTokens: number | null;
  stop: string[];
  /** Seed as text so huge integers hash without precision games. */
  seed: string;
  /** Text of every message, in order (for prompt token counting). */
  messageTexts: string[];
  lastRole: string;
  lastUserText: string;
  tools: ToolSpec[];
  toolChoice: ToolChoice;
  logprobs: boolean;
  topLogprobs: number;
  reasoningDisabled: boolean;
  /** A `[call: NAME {args}]` marker in the last user message naming one of `tools` (scripted.ts). */
  scriptedCall: ScriptedCall | null;
  /** `response_format: {type: json_schema, json_schema: {schema}}`: the answer is valid against it. */
  responseSchema: JsonRecord | null;
}

function responseSchemaOf(format: unknown): JsonRecord | null {
  if (!isRecord(format) || format['type'] !== 'json_schema' || !isRecord(format['json_schema'])) return null;
  const schema = format['json_schema']['schema'];
  return isRecord(schema) ? schema : null;
}

export const DEFAULT_CHAT_MODEL = 'sim-chat';
const MAX_N = 128;

/** Text parts are joined with "\n"; non-text parts (images, audio) contribute nothing. */
export function messageContentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  const parts: string[] = [];
  for (const part of content) {
    if (typeof part === 'string') parts.push(part);
    else if (isRecord(part) && typeof part['text'] === 'string') parts.push(part['text']);
  }
  return parts.join('\n');
}

function messageText(message: JsonRecord): string {
  let text = messageContentText(message['content']);
  // Assistant tool calls are part of the prompt a real model would see.
  const toolCalls = message['tool_calls'];
  if (Array.isArray(toolCalls)) {
    for (const call of toolCalls) {
      const fn = isRecord(call) ? call['function'] : undefined;
      if (isRecord(fn)) text += `${String(fn['name'] ?? '')}${String(fn['arguments'] ?? '')}`;
    }
  }
  return text;
}

function optionalPositiveInt(body: JsonRecord, key: string): number | null {
  const v = body[key];
  if (v === undefined || v === null) return null;
  if (!isInteger(v) || v < 1) throw invalidRequest(`'${key}' must be a positive integer`, key);
  return v;
}

function parseStop(v: unknown): string[] {
  if (v === undefined || v === null) return [];
  if (typeof v === 'string') return v.length > 0 ? [v] : [];
  if (Array.isArray(v) && v.every((s): s is string => typeof s === 'string')) return v.filter((s) => s.length > 0);
  throw invalidRequest("'stop' must be a string or an array of strings", 'stop');
}

function parseTools(v: unknown): ToolSpec[] {
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v)) throw invalidRequest("'tools' must be an array", 'tools');
  const tools: ToolSpec[] = [];
  v.forEach((tool, i) => {
    const fn = isRecord(tool) ? tool['function'] : undefined;
    if (!isRecord(fn) || typeof fn['name'] !== 'string' || fn['name'].length === 0) {
      throw invalidRequest(`'tools[${i}].function.name' is required`, `tools[${i}].function.name`);
    }
    tools.push({ name: fn['name'], parameters: fn['parameters'] });
  });
  return tools;
}

function parseToolChoice(v: unknown, tools: ToolSpec[]): ToolChoice {
  if (v === undefined || v === null) return 'auto';
  if (v === 'none' || v === 'auto' || v === 'required') return v;
  const fn = isRecord(v) ? v['function'] : undefined;
  if (isRecord(fn) && typeof fn['name'] === 'string') {
    const name = fn['name'];
    if (!tools.some((t) => t.name === name)) {
      throw invalidRequest(`tool_choice names function '${name}' which is not in 'tools'`, 'tool_choice');
    }
    return { name };
  }
  throw invalidRequest("'tool_choice' must be 'none', 'auto', 'required' or {type:'function',function:{name}}", 'tool_choice');
}

function reasoningDisabled(body: JsonRecord): boolean {
  if (body['reasoning_effort'] === 'none') return true;
  const r = body['reasoning'];
  return isRecord(r) && (r['enabled'] === false || r['effort'] === 'none');
}

export function parseChatRequest(body: unknown): ChatRequestView {
  if (!isRecord(body)) throw invalidRequest('Request body must be a JSON object');
  const messages = body['messages'];
  if (!Array.isArray(messages) || messages.length === 0) {
    throw invalidRequest("'messages' must be a non-empty array", 'messages');
  }
  const messageTexts: string[] = [];
  let lastRole = '';
  let lastUserText = '';
  messages.forEach((m, i) => {
    if (!isRecord(m) || typeof m['role'] !== 'string') {
      throw invalidRequest(`'messages[${i}].role' is required`, `messages[${i}].role`);
    }
    const text = messageText(m);
    messageTexts.push(text);
    lastRole = m['role'];
    if (lastRole === 'user') lastUserText = messageContentText(m['content']);
  });

  const model = body['model'];
  if (model !== undefined && (typeof model !== 'string' || model.length === 0)) {
    throw invalidRequest("'model' must be a non-empty string", 'model');
  }
  const n = body['n'] ?? 1;
  if (!isInteger(n) || n < 1 || n > MAX_N) throw invalidRequest(`'n' must be an integer between 1 and ${MAX_N}`, 'n');
  const topLogprobs = body['top_logprobs'] ?? 0;
  if (!isInteger(topLogprobs) || topLogprobs < 0 || topLogprobs > 20) {
    throw invalidRequest("'top_logprobs' must be an integer between 0 and 20", 'top_logprobs');
  }
  const seed = body['seed'];
  if (seed !== undefined && seed !== null && !isInteger(seed)) throw invalidRequest("'seed' must be an integer", 'seed');
  const tools = parseTools(body['tools']);
  const streamOptions = body['stream_options'];
  const call = scriptedCall(lastUserText);

  return {
    model: model ?? DEFAULT_CHAT_MODEL,
    stream: body['stream'] === true,
    includeUsage: isRecord(streamOptions) && streamOptions['include_usage'] === true,
    n,
    maxTokens: optionalPositiveInt(body, 'max_completion_tokens') ?? optionalPositiveInt(body, 'max_tokens'),
    stop: parseStop(body['stop']),
    seed: seed === undefined || seed === null ? '' : String(seed),
    messageTexts,
    lastRole,
    lastUserText,
    tools,
    toolChoice: parseToolChoice(body['tool_choice'], tools),
    logprobs: body['logprobs'] === true,
    topLogprobs: body['logprobs'] === true ? topLogprobs : 0,
    reasoningDisabled: reasoningDisabled(body),
    scriptedCall: call && tools.some((t) => t.name === call.name) ? call : null,
    responseSchema: responseSchemaOf(body['response_format']),
  };
}
