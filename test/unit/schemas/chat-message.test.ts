import { describe, expect, it } from 'vitest';
import { parseChatRequest } from '../../../src/schemas/chat-request.js';
import { expectRefusal } from './refusal.js';

type Message = Record<string, unknown>;

/** Puts the message under test at index 1, so every param shows the index is carried through. */
const withMessage = (message: unknown) => ({ model: 'm', messages: [{ role: 'system', content: 'Be brief.' }, message] });
const user = (content: unknown): Message => ({ role: 'user', content });
const CALL = { id: 'call_1', type: 'function', function: { name: 'f', arguments: '{}' } };
const assistantCalling = (call: unknown): Message => ({ role: 'assistant', content: null, tool_calls: [call] });

describe('message validation accepts', () => {
  it.each<[string, Message]>([
    ['an assistant message with tool_calls and null content', assistantCalling(CALL)],
    ['an assistant message with tool_calls and no content', { role: 'assistant', tool_calls: [CALL] }],
    ['an assistant message with a refusal and no content', { role: 'assistant', refusal: 'I cannot.' }],
    ['an assistant message with a refusal part', { role: 'assistant', content: [{ type: 'refusal', refusal: 'No.' }] }],
    ['an assistant message with a null function_call', { role: 'assistant', content: 'ok', function_call: null }],
    ['a tool message with its tool_call_id', { role: 'tool', tool_call_id: 'call_1', content: 'sunny' }],
    ['a developer message with a name', { role: 'developer', name: 'ops', content: 'Be terse.' }],
    ['an image given as a data: URL', user([{ type: 'image_url', image_url: { url: 'data:image/jpeg;base64,/9j/' } }])],
    ['an image given as an http URL with a detail', user([{ type: 'image_url', image_url: { url: 'http://example.com/a.gif', detail: 'low' } }])],
    ['an audio part in any named format', user([{ type: 'input_audio', input_audio: { data: 'AAAA', format: 'flac' } }])],
    ['an empty string content', user('')],
  ])('%s', (_, message) => {
    expect(parseChatRequest(withMessage(message)).messages[1]?.role).toBe(message['role']);
  });
});

describe('message validation refuses', () => {
  it('role function as unsupported_value naming the message', () => {
    expectRefusal(() => parseChatRequest(withMessage({ role: 'function', name: 'f', content: '{}' })), {
      code: 'unsupported_value',
      param: 'messages[1].role',
      message: /legacy function calling is not supported.*got "function"/,
    });
  });

  it('an assistant message carrying function_call as unsupported_parameter', () => {
    expectRefusal(() => parseChatRequest(withMessage({ role: 'assistant', content: null, function_call: { name: 'f', arguments: '{}' } })), {
      code: 'unsupported_parameter',
      param: 'messages[1].function_call',
      message: /send tool_calls instead/,
    });
  });

  it.each<[string, unknown, string, RegExp]>([
    ['an unknown role', { role: 'bot', content: 'x' }, 'messages[1].role', /one of system, user, assistant, tool, developer; got "bot"/],
    ['a missing role', { content: 'x' }, 'messages[1].role', /one of system/],
    ['a message that is a string', 'hello', 'messages[1]', /message object with a role; got "hello"/],
    ['numeric content', user(5), 'messages[1].content', /string or a non-empty array of content parts; got 5/],
    ['an empty content array', user([]), 'messages[1].content', /non-empty array/],
    ['null content on a user message', user(null), 'messages[1].content', /may be null only on an assistant message with tool_calls/],
    ['missing content on a plain assistant message', { role: 'assistant' }, 'messages[1].content', /may be null only/],
    ['null content beside an empty tool_calls list', { role: 'assistant', content: null, tool_calls: [] }, 'messages[1].content', /may be null only/],
    ['an image URL with an ftp scheme', user([{ type: 'image_url', image_url: { url: 'ftp://example.com/a.png' } }]), 'messages[1].content[0].image_url.url', /http, https or data: URL; got "ftp:/],
    ['an image URL that is not a URL', user([{ type: 'image_url', image_url: { url: 'cat.png' } }]), 'messages[1].content[0].image_url.url', /http, https or data: URL/],
    ['an image part without image_url', user([{ type: 'image_url' }]), 'messages[1].content[0].image_url', /object with a url/],
    ['an unknown image detail', user([{ type: 'image_url', image_url: { url: 'https://x.io/a.png', detail: 'ultra' } }]), 'messages[1].content[0].image_url.detail', /one of auto, low, high/],
    ['an unknown part type', user([{ type: 'text', text: 'a' }, { type: 'file', file: {} }]), 'messages[1].content[1].type', /type is one of text, image_url, input_audio, video_url, refusal/],
    ['a part that is a string', user(['hello']), 'messages[1].content[0]', /content part object/],
    ['a text part whose text is a number', user([{ type: 'text', text: 5 }]), 'messages[1].content[0].text', /must be a string; got 5/],
    ['an audio part without a format', user([{ type: 'input_audio', input_audio: { data: 'AAAA' } }]), 'messages[1].content[0].input_audio.format', /audio format/],
    ['an audio part without data', user([{ type: 'input_audio', input_audio: { format: 'wav' } }]), 'messages[1].content[0].input_audio.data', /base64/],
    ['a video part without a url', user([{ type: 'video_url', video_url: {} }]), 'messages[1].content[0].video_url.url', /http, https or data: URL; got nothing/],
    ['a refusal part on a user message', user([{ type: 'refusal', refusal: 'no' }]), 'messages[1].content[0].type', /refusal only on an assistant message/],
    ['a numeric name', { role: 'user', name: 3, content: 'x' }, 'messages[1].name', /must be a string/],
    ['a tool message without tool_call_id', { role: 'tool', content: 'sunny' }, 'messages[1].tool_call_id', /required on a tool message/],
    ['tool_calls that are an object', { role: 'assistant', content: null, tool_calls: CALL }, 'messages[1].tool_calls', /array of tool calls/],
    ['a tool call without an id', assistantCalling({ ...CALL, id: undefined }), 'messages[1].tool_calls[0].id', /non-empty string/],
    ['a tool call whose type is not function', assistantCalling({ ...CALL, type: 'code' }), 'messages[1].tool_calls[0].type', /must be function/],
    ['tool call arguments given as an object', assistantCalling({ ...CALL, function: { name: 'f', arguments: {} } }), 'messages[1].tool_calls[0].function.arguments', /JSON-encoded arguments; got an object/],
  ])('%s', (_, message, param, text) => {
    expectRefusal(() => parseChatRequest(withMessage(message)), { code: 'invalid_request', param, message: text });
  });
});
