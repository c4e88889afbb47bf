import { describe, expect, it } from 'vitest';
import type { ModelConfig } from '../../../../src/config.js';
import { resolveReasoning, type ReasoningPlan } from '../../../../src/core/chat/reasoning.js';
import { parseChatRequest } from '../../../../src/schemas/chat-request.js';
import { expectRefusal } from '../../schemas/refusal.js';

type Body = Record<string, unknown>;

const model = (reasoning: ModelConfig['reasoning'], reasoning_budget = false): ModelConfig => ({
  id: 'm',
  context_window: 8192,
  capabilities: [],
  reasoning,
  reasoning_budget,
});
const request = (fields: Body) => parseChatRequest({ model: 'm', messages: [{ role: 'user', content: 'hi' }], ...fields });
const resolve = (fields: Body, m: ModelConfig) => resolveReasoning(request(fields), m);

const NON_REASONING = model('none');
const ON_OFF = model('on_off', true);
const THREE_LEVELS = model(['low', 'medium', 'high'], true);

type Mapped = Pick<ReasoningPlan, 'effort' | 'adjustedFrom' | 'thinkingOff'>;

describe('resolveReasoning maps', () => {
  it.each<[string, ModelConfig, Body, Mapped]>([
    ['no reasoning options to no effort', THREE_LEVELS, {}, { effort: null, adjustedFrom: null, thinkingOff: false }],
    ['none on an on/off model to thinking off', ON_OFF, { reasoning_effort: 'none' }, { effort: 'none', adjustedFrom: null, thinkingOff: true }],
    ['minimal on an on/off model to thinking off, reported', ON_OFF, { reasoning_effort: 'minimal' }, { effort: 'none', adjustedFrom: 'minimal', thinkingOff: true }],
    ['low on an on/off model to on, sent as medium', ON_OFF, { reasoning_effort: 'low' }, { effort: 'medium', adjustedFrom: 'low', thinkingOff: false }],
    ['medium on an on/off model unchanged', ON_OFF, { reasoning: { effort: 'medium' } }, { effort: 'medium', adjustedFrom: null, thinkingOff: false }],
    ['max on an on/off model to medium', ON_OFF, { reasoning_effort: 'max' }, { effort: 'medium', adjustedFrom: 'max', thinkingOff: false }],
    ['enabled false on an on/off model to thinking off', ON_OFF, { reasoning: { enabled: false } }, { effort: 'none', adjustedFrom: null, thinkingOff: true }],
    ['enabled true alone to medium', ON_OFF, { reasoning: { enabled: true } }, { effort: 'medium', adjustedFrom: null, thinkingOff: false }],
    ['a listed level unchanged', THREE_LEVELS, { reasoning_effort: 'low' }, { effort: 'low', adjustedFrom: null, thinkingOff: false }],
    ['minimal to the lowest listed level', THREE_LEVELS, { reasoning_effort: 'minimal' }, { effort: 'low', adjustedFrom: 'minimal', thinkingOff: false }],
    ['xhigh to the highest listed level', THREE_LEVELS, { reasoning_effort: 'xhigh' }, { effort: 'high', adjustedFrom: 'xhigh', thinkingOff: false }],
    ['max to the highest listed level', THREE_LEVELS, { reasoning: { effort: 'max' } }, { effort: 'high', adjustedFrom: 'max', thinkingOff: false }],
    ['a listed xhigh to itself, not to a higher max', model(['low', 'xhigh', 'max']), { reasoning_effort: 'xhigh' }, { effort: 'xhigh', adjustedFrom: null, thinkingOff: false }],
    ['high to the nearest listed level', model(['low', 'xhigh', 'max']), { reasoning_effort: 'high' }, { effort: 'xhigh', adjustedFrom: 'high', thinkingOff: false }],
    ['low to the nearer lower level', model(['minimal', 'high']), { reasoning_effort: 'low' }, { effort: 'minimal', adjustedFrom: 'low', thinkingOff: false }],
    ['medium between two equally near levels to the higher', model(['low', 'high']), { reasoning_effort: 'medium' }, { effort: 'high', adjustedFrom: 'medium', thinkingOff: false }],
    ['minimal on an unsorted list to its lowest level', model(['high', 'low']), { reasoning_effort: 'minimal' }, { effort: 'low', adjustedFrom: 'minimal', thinkingOff: false }],
    ['enabled true to the level that serves medium, reported', model(['high']), { reasoning: { enabled: true } }, { effort: 'high', adjustedFrom: 'medium', thinkingOff: false }],
    ['equal reasoning_effort and reasoning.effort as one', THREE_LEVELS, { reasoning_effort: 'high', reasoning: { effort: 'high', enabled: true } }, { effort: 'high', adjustedFrom: null, thinkingOff: false }],
    ['a budget with an effort on a model that enforces budgets', THREE_LEVELS, { reasoning: { effort: 'low', max_tokens: 512 } }, { effort: 'low', adjustedFrom: null, thinkingOff: false }],
  ])('%s', (_, m, fields, expected) => {
    expect(resolve(fields, m)).toMatchObject(expected);
  });
});

describe('resolveReasoning decides whether reasoning is left out of the response', () => {
  it.each<[string, Body, boolean]>([
    ['includes it by default', {}, false],
    ['excludes it for reasoning.exclude true', { reasoning: { exclude: true } }, true],
    ['excludes it for include_reasoning false', { include_reasoning: false }, true],
    ['includes it for include_reasoning true', { include_reasoning: true }, false],
    ['lets reasoning.exclude false win over include_reasoning false', { reasoning: { exclude: false }, include_reasoning: false }, false],
    ['lets reasoning.exclude true win over include_reasoning true', { reasoning: { exclude: true }, include_reasoning: true }, true],
  ])('%s', (_, fields, exclude) => {
    expect(resolve(fields, THREE_LEVELS).exclude).toBe(exclude);
  });

  it.each<[string, Body]>([
    ['reasoning.exclude', { reasoning: { exclude: true } }],
    ['include_reasoning', { include_reasoning: false }],
  ])('accepts %s on a non-reasoning model', (_, fields) => {
    expect(resolve(fields, NON_REASONING)).toEqual({ effort: null, adjustedFrom: null, thinkingOff: false, exclude: true });
  });
});

describe('resolveReasoning refuses', () => {
  it.each<[string, ModelConfig, Body, string, string, RegExp]>([
    ['reasoning_effort and reasoning.effort that differ', THREE_LEVELS, { reasoning_effort: 'low', reasoning: { effort: 'high' } }, 'invalid_request', 'reasoning.effort', /must be equal/],
    ['enabled false with an effort other than none', THREE_LEVELS, { reasoning: { enabled: false, effort: 'high' } }, 'invalid_request', 'reasoning.enabled', /contradicts effort high/],
    ['enabled true with effort none', ON_OFF, { reasoning_effort: 'none', reasoning: { enabled: true } }, 'invalid_request', 'reasoning.enabled', /contradicts effort none/],
    ['effort none with a thinking budget', ON_OFF, { reasoning: { effort: 'none', max_tokens: 100 } }, 'invalid_request', 'reasoning.max_tokens', /thinking is off/],
    ['enabled false with a thinking budget', ON_OFF, { reasoning: { enabled: false, max_tokens: 100 } }, 'invalid_request', 'reasoning.max_tokens', /thinking is off/],
    ['a budget when the model maps minimal to thinking off', ON_OFF, { reasoning_effort: 'minimal', reasoning: { max_tokens: 100 } }, 'invalid_request', 'reasoning.max_tokens', /maps minimal to thinking off/],
    ['reasoning_effort on a non-reasoning model', NON_REASONING, { reasoning_effort: 'low' }, 'unsupported_parameter', 'reasoning_effort', /does not reason/],
    ['reasoning_effort none on a non-reasoning model', NON_REASONING, { reasoning_effort: 'none' }, 'unsupported_parameter', 'reasoning_effort', /does not reason/],
    ['reasoning.effort on a non-reasoning model', NON_REASONING, { reasoning: { effort: 'high' } }, 'unsupported_parameter', 'reasoning.effort', /reasoning.effort is not supported/],
    ['reasoning.enabled on a non-reasoning model', NON_REASONING, { reasoning: { enabled: true } }, 'unsupported_parameter', 'reasoning.enabled', /reasoning.enabled is not supported/],
    ['reasoning.max_tokens on a non-reasoning model', NON_REASONING, { reasoning: { max_tokens: 64 } }, 'unsupported_parameter', 'reasoning.max_tokens', /does not reason/],
    ['reasoning.max_tokens on a model without budgets', model('on_off'), { reasoning: { effort: 'high', max_tokens: 64 } }, 'unsupported_parameter', 'reasoning.max_tokens', /cannot enforce a thinking budget/],
    ['reasoning_effort none on a model that always reasons', THREE_LEVELS, { reasoning_effort: 'none' }, 'unsupported_value', 'reasoning_effort', /always reasons. Supported values: low, medium, high/],
    ['reasoning.effort none on a model that always reasons', THREE_LEVELS, { reasoning: { effort: 'none' } }, 'unsupported_value', 'reasoning.effort', /Supported values: low, medium, high/],
    ['enabled false on a model that always reasons', model(['high', 'low']), { reasoning: { enabled: false } }, 'unsupported_value', 'reasoning.enabled', /enabled false is not supported.*Supported values: low, high/],
  ])('%s', (_, m, fields, code, param, message) => {
    expectRefusal(() => resolve(fields, m), { code, param, message });
  });
});
