/**
 * Response and conversation items: the client's input made canonical (every item gets an id and the full
 * shape OpenAI returns when it is listed), and items turned into the chat messages of one upstream turn.
 * Pure: ids come from the caller.
 */
import { GatewayError } from '../../errors.js';

export type Item = Record<string, unknown>;
export type NewId = (prefix: string) => string;

const MESSAGE_ROLES = new Set(['user', 'system', 'developer', 'assistant']);

function bad(param: string, message: string): GatewayError {
  return new GatewayError('invalid_request', { param, message: `${param} ${message}.` });
}

function str(value: unknown): value is string {
  return typeof value === 'string';
}

/** A message's content as canonical parts: input_* for the caller's roles, output_text for the assistant. */
function contentParts(role: string, content: unknown, param: string): Item[] {
  const textType = role === 'assistant' ? 'output_text' : 'input_text';
  const textPart = (text: string): Item => (role === 'assistant' ? { type: textType, text, annotations: [] } : { type: textType, text });
  if (str(content)) return [textPart(content)];
  if (!Array.isArray(content)) throw bad(`${param}.content`, 'must be a string or an array of content parts');
  return content.map((part: unknown, i): Item => {
    const at = `${param}.content[${i}]`;
    if (!part || typeof part !== 'object') throw bad(at, 'must be a content part object');
    const p = part as Item;
    if ((p.type === 'input_text' || p.type === 'output_text') && str(p.text)) return textPart(p.text);
    if (p.type === 'refusal' && str(p.refusal)) return { type: 'refusal', refusal: p.refusal };
    if (p.type === 'input_image' && role !== 'assistant') {
      if (!str(p.image_url)) throw new GatewayError('unsupported_value', { param: `${at}.image_url`, message: `${at}.image_url must be a URL or data URL (file_id images are not supported).` });
      return { type: 'input_image', image_url: p.image_url, detail: str(p.detail) ? p.detail : 'auto' };
    }
    throw new GatewayError('unsupported_value', { param: `${at}.type`, message: `${at}.type ${JSON.stringify(p.type)} is not supported here; use input_text or input_image (output_text or refusal for assistant).` });
  });
}

/** The client's `input` (or conversation items) in canonical form, each with an id. */
export function canonicalItems(input: string | readonly Item[], param: string, newId: NewId): Item[] {
  if (str(input)) return [{ type: 'message', id: newId('msg_'), status: 'completed', role: 'user', content: contentParts('user', input, param) }];
  return input.map((item, i) => canonicalItem(item, `${param}[${i}]`, newId));
}

function canonicalItem(item: Item, param: string, newId: NewId): Item {
  const type = item.type ?? 'message';
  if (type === 'message') {
    const role = item.role;
    if (!str(role) || !MESSAGE_ROLES.has(role)) throw bad(`${param}.role`, 'must be one of user, system, developer, assistant');
    return { type: 'message', id: str(item.id) ? item.id : newId('msg_'), status: 'completed', role, content: contentParts(role, item.content, param) };
  }
  if (type === 'function_call') {
    if (!str(item.call_id)) throw bad(`${param}.call_id`, 'must be a string');
    if (!str(item.name)) throw bad(`${param}.name`, 'must be a string');
    if (!str(item.arguments)) throw bad(`${param}.arguments`, 'must be a string');
    const call: Item = { type: 'function_call', id: str(item.id) ? item.id : newId('fc_'), call_id: item.call_id, name: item.name, arguments: item.arguments, status: 'completed' };
    // A call to a function of a namespace tool (core/responses/tools.ts) keeps its namespace when listed.
    if (str(item.namespace)) call.namespace = item.namespace;
    return call;
  }
  if (type === 'function_call_output') {
    if (!str(item.call_id)) throw bad(`${param}.call_id`, 'must be a string');
    const output = str(item.output) ? item.output : outputText(item.output, `${param}.output`);
    return { type: 'function_call_output', id: str(item.id) ? item.id : newId('fco_'), call_id: item.call_id, output, status: 'completed' };
  }
  throw new GatewayError('unsupported_value', { param: `${param}.type`, message: `${param}.type ${JSON.stringify(type)} is not supported; use message, function_call or function_call_output.` });
}

/** A function_call_output given as content parts: its text parts, joined (the chat tool message is text). */
function outputText(output: unknown, param: string): string {
  if (!Array.isArray(output)) throw bad(param, 'must be a string or an array of input_text parts');
  return output.map((p: unknown) => (p && typeof p === 'object' && str((p as Item).text) ? (p as Item).text : '')).join('');
}

function chatContent(parts: readonly Item[]): string | Item[] {
  if (parts.every((p) => p.type === 'input_text' || p.type === 'output_text')) return parts.map((p) => String(p.text)).join('');
  return parts.map((p) => (p.type === 'input_image' ? { type: 'image_url', image_url: { url: p.image_url, detail: p.detail } } : { type: 'text', text: String(p.text ?? p.refusal ?? '') }));
}

/**
 * Canonical items as chat messages: function calls in a row become one assistant message's tool_calls
 * (joined to the assistant text just before them), function outputs become tool messages.
 */
export function chatMessages(items: readonly Item[]): Item[] {
  const messages: Item[] = [];
  for (const item of items) {
    if (item.type === 'message') {
      const parts = item.content as Item[];
      if (item.role === 'assistant') {
        const refusal = parts.find((p) => p.type === 'refusal');
        const text = parts.filter((p) => p.type === 'output_text').map((p) => String(p.text)).join('');
        messages.push(refusal && text === '' ? { role: 'assistant', content: null, refusal: refusal.refusal } : { role: 'assistant', content: text });
      } else {
        messages.push({ role: item.role, content: chatContent(parts) });
      }
    } else if (item.type === 'function_call') {
      const call = { id: item.call_id, type: 'function', function: { name: item.name, arguments: item.arguments } };
      const last = messages[messages.length - 1];
      if (last && last.role === 'assistant' && last.refusal === undefined) {
        // Pushed, not copied: a copy per call made a run of 100,000 calls quadratic. The array is this loop's own.
        if (Array.isArray(last.tool_calls)) (last.tool_calls as Item[]).push(call);
        else last.tool_calls = [call];
        if (last.content === '') last.content = null;
      } else {
        messages.push({ role: 'assistant', content: null, tool_calls: [call] });
      }
    } else if (item.type === 'function_call_output') {
      messages.push({ role: 'tool', tool_call_id: item.call_id, content: item.output });
    }
  }
  return messages;
}
