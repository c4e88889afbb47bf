/**
 * A Responses request's `tools` as the chat turn's function tools (docs/decisions.md "Responses fields
 * the gateway honours"). Function tools map one to one. A `namespace` groups function tools under a name
 * the model sees (OpenAI's Codex CLI sends one by default); a chat model has no namespaces, so its
 * functions are offered as functions of their own and a call to one comes back as a `function_call` item
 * carrying `namespace`, as OpenAI answers it. Hosted tools (web_search, file_search, code_interpreter,
 * computer use, image generation, MCP, shell, custom tools) need a server that runs them: refused.
 */
import { GatewayError } from '../../errors.js';

export interface ChatTools {
  readonly tools: Record<string, unknown>[];
  /** Function name -> namespace, for the functions that came from a namespace. */
  readonly namespaces: ReadonlyMap<string, string>;
}

function chatFunction(tool: Record<string, unknown>, param: string): Record<string, unknown> {
  if (typeof tool.name !== 'string') throw new GatewayError('invalid_request', { param: `${param}.name`, message: `${param}.name must be a string.` });
  const fn: Record<string, unknown> = { name: tool.name };
  if (tool.description !== undefined && tool.description !== null) fn.description = tool.description;
  if (tool.parameters !== undefined && tool.parameters !== null) fn.parameters = tool.parameters;
  if (tool.strict !== undefined && tool.strict !== null) fn.strict = tool.strict;
  return { type: 'function', function: fn };
}

function unsupported(param: string, type: unknown, allowed: string): GatewayError {
  return new GatewayError('unsupported_value', {
    param: `${param}.type`,
    message: `${param}.type ${JSON.stringify(type)} is not supported: the gateway runs no hosted tools; ${allowed}.`,
  });
}

export function chatToolsOf(tools: readonly Record<string, unknown>[]): ChatTools {
  const out: Record<string, unknown>[] = [];
  const namespaces = new Map<string, string>();
  const seen = new Set<string>();
  const add = (tool: Record<string, unknown>, param: string): void => {
    const fn = chatFunction(tool, param);
    const name = (fn.function as { name: string }).name;
    // Flattened namespaces share one name space in the chat turn: a clash would make a call ambiguous.
    if (seen.has(name)) throw new GatewayError('invalid_request', { param: `${param}.name`, message: `${param}.name ${JSON.stringify(name)} is already the name of another function tool; function names must be unique, namespaces included.` });
    seen.add(name);
    out.push(fn);
  };
  tools.forEach((tool, i) => {
    const param = `tools[${i}]`;
    if (tool.type === 'function') return add(tool, param);
    if (tool.type !== 'namespace') throw unsupported(param, tool.type, 'use function tools, or a namespace of function tools');
    if (typeof tool.name !== 'string') throw new GatewayError('invalid_request', { param: `${param}.name`, message: `${param}.name must be a string.` });
    if (!Array.isArray(tool.tools)) throw new GatewayError('invalid_request', { param: `${param}.tools`, message: `${param}.tools must be an array of function tools.` });
    (tool.tools as unknown[]).forEach((inner, j) => {
      const at = `${param}.tools[${j}]`;
      if (!inner || typeof inner !== 'object') throw new GatewayError('invalid_request', { param: at, message: `${at} must be a tool object.` });
      const t = inner as Record<string, unknown>;
      if (t.type !== 'function') throw unsupported(at, t.type, 'a namespace may hold function tools only');
      add(t, at);
      namespaces.set(t.name as string, tool.name as string);
    });
  });
  return { tools: out, namespaces };
}
