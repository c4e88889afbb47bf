import { describe, expect, it } from 'vitest';
import type { ModelConfig } from '../../../../src/config.js';
import { checkCapabilities, type CapabilityContext } from '../../../../src/core/chat/capabilities.js';
import { parseChatRequest } from '../../../../src/schemas/chat-request.js';
import { expectRefusal } from '../../schemas/refusal.js';

type Body = Record<string, unknown>;
type Capability = ModelConfig['capabilities'][number];

const ALL: Capability[] = ['tools', 'structured_output', 'vision', 'audio_input', 'video_input'];
const without = (...missing: Capability[]): Capability[] => ALL.filter((c) => !missing.includes(c));

const context = (capabilities: Capability[], overrides: Partial<CapabilityContext> = {}): CapabilityContext => ({
  model: { id: 'm', context_window: 8192, capabilities, reasoning: 'none', reasoning_budget: false },
  zeroDataRetention: false,
  projectHasSpeechEndpoint: true,
  videoInputEnabled: true,
  ...overrides,
});

const HI = { role: 'user', content: 'hi' };
const request = (fields: Body) => parseChatRequest({ model: 'm', messages: [HI], ...fields });
const TOOL = { type: 'function', function: { name: 'f' } };
const CALL = { id: 'c1', type: 'function', function: { name: 'f', arguments: '{}' } };
const userParts = (...parts: Body[]): Body => ({ messages: [HI, { role: 'user', content: [{ type: 'text', text: 'look' }, ...parts] }] });
const IMAGE = { type: 'image_url', image_url: { url: 'https://example.com/a.png' } };
const AUDIO = { type: 'input_audio', input_audio: { data: 'AAAA', format: 'wav' } };
const VIDEO = { type: 'video_url', video_url: { url: 'https://example.com/a.mp4' } };

describe('checkCapabilities accepts', () => {
  it.each<[string, Body, CapabilityContext]>([
    ['a plain text turn on a model with no capabilities', {}, context([])],
    ['an empty tools list on a model without tool calling', { tools: [] }, context([])],
    ['response_format text on a model without structured output', { response_format: { type: 'text' } }, context([])],
    ['every feature on a model and deployment that has them all', {
      ...userParts(IMAGE, AUDIO, VIDEO), tools: [TOOL], response_format: { type: 'json_object' }, modalities: ['text', 'audio'], store: true,
    }, context(ALL)],
    ['tool-call history on a model with tool calling', { messages: [HI, { role: 'assistant', tool_calls: [CALL] }, { role: 'tool', tool_call_id: 'c1', content: 'ok' }] }, context(['tools'])],
    ['store false in a zero-data-retention workspace', { store: false }, context([], { zeroDataRetention: true })],
    ['modalities of text alone without a speech endpoint', { modalities: ['text'] }, context([], { projectHasSpeechEndpoint: false })],
    ['a streamed turn asking for text only', { modalities: ['text'], stream: true }, context(ALL)],
  ])('%s', (_, fields, ctx) => {
    expect(() => checkCapabilities(request(fields), ctx)).not.toThrow();
  });
});

describe('checkCapabilities refuses', () => {
  it.each<[string, Body, CapabilityContext, string, string, RegExp]>([
    ['tools on a model without tool calling', { tools: [TOOL] }, context(without('tools')), 'unsupported_parameter', 'tools', /does not support tool calling/],
    ['an assistant tool call in the history', { messages: [HI, { role: 'assistant', tool_calls: [CALL] }] }, context(without('tools')), 'unsupported_parameter', 'messages', /messages\[1\] carries tool_calls/],
    ['a tool result in the history', { messages: [HI, { role: 'assistant', content: 'x' }, { role: 'tool', tool_call_id: 'c1', content: 'ok' }] }, context(without('tools')), 'unsupported_parameter', 'messages', /messages\[2\] is a tool result/],
    ['json_object without structured output', { response_format: { type: 'json_object' } }, context(without('structured_output')), 'unsupported_parameter', 'response_format', /json_object is not supported/],
    ['json_schema without structured output', { response_format: { type: 'json_schema', json_schema: { name: 'x' } } }, context(without('structured_output')), 'unsupported_parameter', 'response_format', /structured output/],
    ['an image without vision', userParts(IMAGE), context(without('vision')), 'invalid_request', 'messages[1].content[1]', /image_url part, but .* image input \(vision\)/],
    ['audio input without audio_input', userParts(AUDIO), context(without('audio_input')), 'invalid_request', 'messages[1].content[1]', /input_audio part, but .*audio_input/],
    ['video when the deployment has video input off', userParts(VIDEO), context(ALL, { videoInputEnabled: false }), 'invalid_request', 'messages[1].content[1]', /video input is not enabled on this deployment/],
    ['video when the model lacks video_input', userParts(VIDEO), context(without('video_input')), 'invalid_request', 'messages[1].content[1]', /video_input/],
    ['audio output without a speech endpoint', { modalities: ['text', 'audio'] }, context(ALL, { projectHasSpeechEndpoint: false }), 'invalid_request', 'modalities', /needs a speech endpoint/],
    ['audio output on a streamed turn, whose answer is spoken only once finished', { modalities: ['text', 'audio'], stream: true }, context(ALL), 'unsupported_value', 'stream', /cannot be combined with modalities/],
    ['audio input when the operator turned it off', userParts(AUDIO), context(ALL, { audioInputEnabled: false }), 'invalid_request', 'messages[1].content[1]', /audio input is turned off on this deployment/],
    ['store true in a zero-data-retention workspace', { store: true }, context(ALL, { zeroDataRetention: true }), 'retention_not_permitted', 'store', /zero-data-retention/],
  ])('%s', (_, fields, ctx, code, param, message) => {
    expectRefusal(() => checkCapabilities(request(fields), ctx), { code, param, message });
  });
});
