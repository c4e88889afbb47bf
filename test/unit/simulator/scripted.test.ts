/**
 * The simulator's scripted answers (docs/simulator.md "Scripted answers"): a `[call: NAME {args}]` marker
 * makes the turn that exact tool call, and a json_schema response_format gets an answer valid against the
 * schema, so structured output parses against the demo as it would against a real model.
 */
import { Ajv2020 } from 'ajv/dist/2020.js';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { planChatTurn, type PlannedChoice } from '../../../src/simulator/chat-completion.js';
import { parseChatRequest } from '../../../src/simulator/chat-request.js';
import { DEFAULT_KNOBS } from '../../../src/simulator/knobs.js';
import { schemaSample, scriptedCall } from '../../../src/simulator/scripted.js';

function choiceOf(body: Record<string, unknown>): PlannedChoice {
  const choice = planChatTurn(parseChatRequest(body), DEFAULT_KNOBS, { reasons: false }).choices[0];
  if (!choice) throw new Error('no choice');
  return choice;
}

const shell = { type: 'function', function: { name: 'exec_command', parameters: { type: 'object', properties: { cmd: { type: 'string' } } } } };
const other = { type: 'function', function: { name: 'view_image', parameters: { type: 'object', properties: { path: { type: 'string' } } } } };

describe('the [call: ...] marker', () => {
  it('calls the named tool with exactly the given arguments, not the first tool with sample ones', () => {
    const choice = choiceOf({ messages: [{ role: 'user', content: 'go [call: exec_command {"cmd": "echo hi"}]' }], tools: [other, shell] });
    expect(choice.toolCalls).toEqual([expect.objectContaining({ name: 'exec_command', arguments: '{"cmd":"echo hi"}' })]);
    expect(choice.finishReason).toBe('tool_calls');
  });

  it('is ignored when it names no declared tool, when its arguments are not a JSON object, and once the tool has answered', () => {
    expect(choiceOf({ messages: [{ role: 'user', content: '[call: nope {"a":1}]' }], tools: [other] }).toolCalls[0]).toMatchObject({ name: 'view_image', arguments: '{"path":"sample"}' });
    expect(scriptedCall('[call: exec_command {not json}]')).toBeNull();
    const answered = choiceOf({
      messages: [
        { role: 'user', content: '[call: exec_command {"cmd":"echo hi"}]' },
        { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'exec_command', arguments: '{"cmd":"echo hi"}' } }] },
        { role: 'tool', tool_call_id: 'c1', content: 'hi' },
      ],
      tools: [shell],
    });
    expect(answered.toolCalls).toEqual([]);
    expect(answered.contentText).toMatch(/^Tool result received:/);
  });
});

describe('json_schema answers', () => {
  const Person = z.object({
    name: z.string().min(8),
    born: z.number().int().min(1800).max(2000),
    email: z.email(),
    languages: z.array(z.enum(['English', 'French'])).min(2),
    address: z.object({ city: z.string(), zip: z.string().nullable() }),
    role: z.union([z.literal('admin'), z.literal('user')]),
    nickname: z.string().optional(),
  });

  it('answers with JSON valid against the schema (a zod schema as the SDK helpers send it), deterministically', () => {
    const schema = z.toJSONSchema(Person);
    const choice = choiceOf({ messages: [{ role: 'user', content: 'who?' }], response_format: { type: 'json_schema', json_schema: { name: 'person', schema } } });
    const value: unknown = JSON.parse(choice.contentText ?? '');
    const validate = new Ajv2020({ strict: false, validateFormats: false }).compile(schema);
    expect(validate(value), JSON.stringify(validate.errors)).toBe(true);
    expect(Person.parse(value)).toEqual(value);
    expect(choiceOf({ messages: [{ role: 'user', content: 'someone else' }], response_format: { type: 'json_schema', json_schema: { name: 'person', schema } } }).contentText).toBe(choice.contentText);
  });

  it('follows local $refs and bounds recursion', () => {
    const schema = { type: 'object', properties: { root: { $ref: '#/$defs/node' } }, $defs: { node: { type: 'object', properties: { label: { type: 'string' }, children: { type: 'array', items: { $ref: '#/$defs/node' } } } } } };
    const value = schemaSample(schema) as { root: { label: string; children: unknown[] } };
    expect(value.root.label).toBe('sample');
    expect(JSON.stringify(value).length).toBeLessThan(2000);
  });

  it('leaves an echo: prompt verbatim, so a test can choose the exact answer', () => {
    const choice = choiceOf({ messages: [{ role: 'user', content: 'echo: {"a":1}' }], response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'object', properties: { b: { type: 'string' } } } } } });
    expect(choice.contentText).toBe('{"a":1}');
  });
});
