/** The pure cores of the harness features (src/core/harness), one describe per file. */
import { describe, expect, it } from 'vitest';
import { dropToolsForModel, toolHistoryAsText } from '../../../../src/core/harness/capability-tool-drop.js';
import { compactedMessages, planCompaction, summaryMaxTokens, summaryRequest, SUMMARY_PREFIX } from '../../../../src/core/harness/compaction.js';
import { compressBody, compressText, MIN_TEXT_CHARS } from '../../../../src/core/harness/compression.js';
import { cappedChoice, correctionMessages, findMalformedCall } from '../../../../src/core/harness/corrective-retry.js';
import { extractTextCalls, realizeTextCalls } from '../../../../src/core/harness/fabricated-tool-calls.js';
import { FANOUT_NUDGE, fanoutNudge } from '../../../../src/core/harness/fanout-nudge.js';
import { MAX_TOKENS_FLOOR, raiseMaxTokens, REASONING_MAX_TOKENS_FLOOR } from '../../../../src/core/harness/max-tokens-floor.js';
import { allowDeclaredCalls } from '../../../../src/core/harness/tool-allowlist.js';
import { demoteToolChoice } from '../../../../src/core/harness/tool-choice-demotion.js';
import { DEFAULT_TOOL_TOP_K, keepTools, pinnedTools, selectTopK, toolText, topKCount, turnQuery } from '../../../../src/core/harness/tool-top-k.js';

type Json = Record<string, unknown>;
const tool = (name: string, description = ''): Json => ({ type: 'function', function: { name, description, parameters: { type: 'object', properties: { q: { type: 'string' } } } } });
const user = (content: string): Json => ({ role: 'user', content });
const call = (name: string, args: string, id = 'call_1'): Json => ({ id, type: 'function', function: { name, arguments: args } });
const choiceWith = (message: Json, finish = 'stop'): Json => ({ index: 0, message: { role: 'assistant', content: null, tool_calls: null, ...message }, finish_reason: finish });

describe('fan-out nudge', () => {
  const body = { messages: [{ role: 'system', content: 'rules' }, user('hi')], tools: [tool('a')] };

  it('is a no-op with fewer than two server-owned tools', () => {
    expect(fanoutNudge(body, 0)).toBeNull();
    expect(fanoutNudge(body, 1)).toBeNull();
  });

  it('adds one system message after the leading instructions with two or more', () => {
    const nudged = fanoutNudge(body, 2) as { messages: Json[] };
    expect(nudged.messages.map((m) => m.role)).toEqual(['system', 'system', 'user']);
    expect(nudged.messages[1]?.content).toBe(FANOUT_NUDGE);
  });

  it('respects an explicit parallel_tool_calls: false', () => {
    expect(fanoutNudge({ ...body, parallel_tool_calls: false }, 3)).toBeNull();
  });
});

describe('compaction', () => {
  const messages = [{ role: 'system', content: 'sys' }, user('one'), { role: 'assistant', content: 'two' }, user('three'), { role: 'assistant', content: 'four' }, user('now?')];

  it('keeps the instructions and the current turn and summarises what lies between', () => {
    const plan = planCompaction(messages);
    expect(plan?.head).toEqual([messages[0]]);
    expect(plan?.old).toEqual(messages.slice(1, 5));
    expect(plan?.tail).toEqual([messages[5]]);
    const out = compactedMessages(plan!, 'the gist');
    expect(out).toEqual([messages[0], { role: 'system', content: `${SUMMARY_PREFIX}the gist` }, messages[5]]);
  });

  it('has nothing to compact when only the current turn follows the instructions', () => {
    expect(planCompaction([{ role: 'system', content: 's' }, user('q')])).toBeNull();
  });

  it('builds a summary call that fits its own window, cutting the oldest text first', () => {
    const long = [user('a'.repeat(5000)), { role: 'assistant', content: 'END-MARK' }, user('q')];
    const body = summaryRequest(planCompaction(long)!, 'up-model', 1024);
    const text = String(((body.messages as Json[])[1] as Json).content);
    expect(Buffer.byteLength(text)).toBeLessThan(1024 - summaryMaxTokens(1024));
    expect(text.startsWith('[earlier part of the conversation cut]')).toBe(true);
    expect(text).toContain('END-MARK');
    expect(body).toMatchObject({ model: 'up-model', max_tokens: 128, stream: false });
  });
});

describe('tool top-k', () => {
  it('reads k from its companion header, ignoring what is not an integer from 1 to 128', () => {
    expect(topKCount({})).toBe(DEFAULT_TOOL_TOP_K);
    expect(topKCount({ 'x-service-augment-tool-top-k-count': '3' })).toBe(3);
    for (const bad of ['0', '129', 'x', '-2', '2.5']) expect(topKCount({ 'x-service-augment-tool-top-k-count': bad })).toBe(DEFAULT_TOOL_TOP_K);
  });

  it('embeds a tool as its name words, description and parameter names', () => {
    expect(toolText(tool('get_weather', 'Weather now'))).toBe('get weather. Weather now. q');
  });

  it('queries with the last user message', () => {
    expect(turnQuery([user('first'), { role: 'assistant', content: 'x' }, user('second')])).toBe('second');
  });

  it('keeps pinned tools, then the most similar, in the client order', () => {
    const v = (...xs: number[]) => Float32Array.from(xs);
    const keep = selectTopK(['a', 'b', 'c', 'd'], new Set(['d']), v(1, 0), [v(0, 1), v(1, 0), v(0.9, 0.1), v(0, 1)], 2);
    expect(keep).toEqual([1, 3]);
    const body = { tools: [tool('a'), tool('b'), tool('c'), tool('d')] };
    expect((keepTools(body, keep) as { tools: Json[] }).tools.map((t) => (t.function as Json).name)).toEqual(['b', 'd']);
    expect(keepTools(body, [0, 1, 2, 3])).toBeNull();
  });

  it('pins the named tool_choice and functions the history called', () => {
    const body = { tool_choice: { type: 'function', function: { name: 'x' } }, messages: [{ role: 'assistant', tool_calls: [call('y', '{}')] }] };
    expect([...pinnedTools(body)].sort()).toEqual(['x', 'y']);
  });
});

describe('max_tokens floor', () => {
  it('raises a tiny max to the floor, in the field in effect', () => {
    expect(raiseMaxTokens({ max_tokens: 16 }, { reasoningModel: false, window: 8192, inputUpperBound: 100 })).toEqual({ max_tokens: MAX_TOKENS_FLOOR });
    expect(raiseMaxTokens({ max_tokens: 16, max_completion_tokens: 20 }, { reasoningModel: true, window: 8192, inputUpperBound: 100 })).toEqual({ max_tokens: 16, max_completion_tokens: REASONING_MAX_TOKENS_FLOOR });
  });

  it('never raises past the room the input leaves, nor when nothing needs raising', () => {
    expect(raiseMaxTokens({ max_tokens: 16 }, { reasoningModel: false, window: 256, inputUpperBound: 200 })).toEqual({ max_tokens: 56 });
    expect(raiseMaxTokens({ max_tokens: 16 }, { reasoningModel: false, window: 256, inputUpperBound: 250 })).toBeNull();
    expect(raiseMaxTokens({ max_tokens: 500 }, { reasoningModel: false, window: 8192, inputUpperBound: 10 })).toBeNull();
    expect(raiseMaxTokens({}, { reasoningModel: false, window: 8192, inputUpperBound: 10 })).toBeNull();
  });
});

describe('capability tool-drop', () => {
  it('does nothing on a model with tool calling', () => {
    expect(dropToolsForModel({ tools: [tool('a')] }, true)).toBeNull();
  });

  it('drops the declarations and keeps the tool history as text', () => {
    const body = {
      messages: [user('q'), { role: 'assistant', content: null, tool_calls: [call('lookup', '{"q":1}')] }, { role: 'tool', tool_call_id: 'call_1', content: '42' }],
      tools: [tool('lookup')],
      tool_choice: 'auto',
      parallel_tool_calls: true,
    };
    expect(dropToolsForModel(body, false)).toEqual({
      messages: [user('q'), { role: 'assistant', content: '[called lookup({"q":1})]' }, { role: 'user', content: '[result of lookup] 42' }],
    });
    expect(toolHistoryAsText([user('plain')])).toBeNull();
  });
});

describe('corrective retries', () => {
  const declared = new Set(['lookup']);

  it('finds arguments that are not a JSON object and names that were not declared', () => {
    expect(findMalformedCall(choiceWith({ tool_calls: [call('lookup', '{"q":"x"')] }), declared)?.reason).toBe('the arguments are not valid JSON');
    expect(findMalformedCall(choiceWith({ tool_calls: [call('lookup', '[1]')] }), declared)?.reason).toBe('the arguments are not a JSON object');
    expect(findMalformedCall(choiceWith({ tool_calls: [call('other', '{}')] }), declared)?.reason).toContain('not one of the declared tools');
    expect(findMalformedCall(choiceWith({ tool_calls: [call('lookup', '{}')] }), declared)).toBeNull();
  });

  it('appends the attempt as assistant text and a user correction', () => {
    const bad = findMalformedCall(choiceWith({ tool_calls: [call('lookup', '{"q"')] }), declared)!;
    const [attempt, fix] = correctionMessages(choiceWith({ tool_calls: [call('lookup', '{"q"')] }), bad);
    expect(attempt).toEqual({ role: 'assistant', content: '[called lookup({"q")]' });
    expect(fix?.role).toBe('user');
    expect(String(fix?.content)).toContain('could not be run');
  });

  it('ends a capped answer with finish_reason length and no call', () => {
    expect(cappedChoice(choiceWith({ tool_calls: [call('lookup', '{')] }, 'tool_calls'))).toMatchObject({ finish_reason: 'length', message: { content: '', tool_calls: null } });
  });
});

describe('fabricated tool calls', () => {
  const declared = new Set(['lookup']);

  it('reads <tool_call> blocks, bare objects, fenced arrays and the parameters synonym', () => {
    expect(extractTextCalls('Sure. <tool_call>{"name": "lookup", "arguments": {"q": 1}}</tool_call>', declared)).toEqual({ calls: [{ name: 'lookup', arguments: '{"q":1}' }], rest: 'Sure.' });
    expect(extractTextCalls('{"name": "lookup", "parameters": {"q": 2}}', declared)?.calls).toEqual([{ name: 'lookup', arguments: '{"q":2}' }]);
    expect(extractTextCalls('```json\n[{"name": "lookup", "arguments": {}}]\n```', declared)?.calls).toHaveLength(1);
  });

  it('leaves text alone that names no declared tool or is not a call', () => {
    expect(extractTextCalls('{"name": "other", "arguments": {}}', declared)).toBeNull();
    expect(extractTextCalls('{"answer": 42}', declared)).toBeNull();
    expect(extractTextCalls('plain words', declared)).toBeNull();
  });

  it('makes the calls real with the ids given and finish_reason tool_calls', () => {
    const real = realizeTextCalls(choiceWith({ content: '<tool_call>{"name": "lookup", "arguments": {"q": 1}}</tool_call>' }), declared, (i) => `call_x_${i}`);
    expect(real).toMatchObject({ finish_reason: 'tool_calls', message: { content: null, tool_calls: [{ id: 'call_x_0', type: 'function', function: { name: 'lookup', arguments: '{"q":1}' } }] } });
  });
});

describe('chat tool allowlist', () => {
  it('removes calls on undeclared functions and turns an emptied answer into a stop', () => {
    const choice = choiceWith({ tool_calls: [call('rm_rf', '{}')] }, 'tool_calls');
    expect(allowDeclaredCalls(choice, new Set(['lookup']))).toMatchObject({ finish_reason: 'stop', message: { content: '', tool_calls: null } });
    expect(allowDeclaredCalls(choiceWith({ tool_calls: [call('lookup', '{}'), call('rm_rf', '{}', 'c2')] }, 'tool_calls'), new Set(['lookup']))).toMatchObject({
      finish_reason: 'tool_calls',
      message: { tool_calls: [{ id: 'call_1' }] },
    });
    expect(allowDeclaredCalls(choiceWith({ tool_calls: [call('lookup', '{}')] }), new Set(['lookup']))).toBeNull();
  });
});

describe('tool-choice demotion', () => {
  const tools = [tool('lookup')];

  it('demotes a forcing choice after a tool result', () => {
    const body = { tools, tool_choice: 'required', messages: [user('q'), { role: 'assistant', tool_calls: [call('lookup', '{}')] }, { role: 'tool', tool_call_id: 'call_1', content: '1' }] };
    expect(demoteToolChoice(body)?.tool_choice).toBe('auto');
  });

  it('demotes a named function no longer declared and removes the choice when no tools are left', () => {
    expect(demoteToolChoice({ tools, tool_choice: { type: 'function', function: { name: 'gone' } }, messages: [user('q')] })?.tool_choice).toBe('auto');
    expect(demoteToolChoice({ tools: [], tool_choice: 'required', parallel_tool_calls: true, messages: [user('q')] })).toEqual({ tools: [], messages: [user('q')] });
  });

  it('keeps a forcing choice that can be honoured', () => {
    expect(demoteToolChoice({ tools, tool_choice: 'required', messages: [user('q')] })).toBeNull();
    expect(demoteToolChoice({ tools, tool_choice: 'auto', messages: [user('q')] })).toBeNull();
  });
});

describe('compression', () => {
  it('collapses repeated lines, inner whitespace and blank runs', () => {
    const text = ['start', 'same', 'same', 'same', 'same', 'a    b\t\tc   ', '', '', '', '', 'end'].join('\n');
    expect(compressText(text)).toBe(['start', 'same', '[previous line repeated 3 more times]', 'a b c', '', 'end'].join('\n'));
  });

  it('replaces a repeated block of lines by a reference to its first occurrence', () => {
    const trace = ['  at a (x.ts:1)', '  at b (x.ts:2)', '  at c (x.ts:3)', '  at d (x.ts:4)', '  at e (x.ts:5)'];
    const text = ['FAIL one', ...trace, 'FAIL two', ...trace].join('\n');
    expect(compressText(text)).toBe(['FAIL one', ...trace, 'FAIL two', '[repeats the 5 lines that start "  at a (x.ts:1)" above]'].join('\n'));
  });

  it('minifies a text that is one pretty-printed JSON document', () => {
    expect(compressText(JSON.stringify({ a: [1, 2], b: { c: 'x  y' } }, null, 4))).toBe('{"a":[1,2],"b":{"c":"x  y"}}');
  });

  it('keeps two identical lines as they are', () => {
    expect(compressText('x\nx\ny')).toBe('x\nx\ny');
  });

  it('replaces a long text seen before by a back-reference, but never the last user message', () => {
    const log = Array.from({ length: 200 }, (_, i) => `line ${i}`).join('\n');
    const body = { messages: [{ role: 'tool', content: log }, { role: 'tool', content: log }, user(log)] };
    const out = compressBody(body) as { messages: Json[] };
    expect(out.messages[1]?.content).toBe('[same content as messages[0]]');
    expect(out.messages[2]?.content).toBe(log);
  });

  it('leaves short texts alone', () => {
    expect(compressBody({ messages: [user('a   b'.repeat(10))] })).toBeNull();
    expect(MIN_TEXT_CHARS).toBeGreaterThan(50);
  });
});
