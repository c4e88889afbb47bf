/**
 * ResponsesReply writes a Response's terminal answer only once its outcome is stored (the store is async:
 * PostgreSQL is a round trip away), so a client that reads the answer and retrieves the response through
 * any replica finds it; when storing fails, no terminal answer is written and `settled()` rejects.
 */
import { describe, expect, it } from 'vitest';
import type { ResponseState } from '../../../src/core/responses/translate.js';
import { frame, responseEventFrame } from '../../../src/app/responses/event-frames.js';
import { ResponseStreamTranslator } from '../../../src/core/responses/stream-events.js';
import { contentOnlyText, ResponsesReply, type FinishResponse } from '../../../src/app/responses/responses-reply.js';
import type { TurnSink } from '../../../src/app/turn-io.js';
import { parseResponseRequest } from '../../../src/schemas/responses-request.js';

interface Sink extends TurnSink {
  readonly log: string[];
}

function sink(): Sink {
  const log: string[] = [];
  return {
    log,
    open: true,
    setHeader: () => undefined,
    json: (status: number) => void log.push(`json ${status}`),
    beginStream: () => void log.push('begin'),
    write: (chunk: string | Buffer) => {
      for (const m of chunk.toString().matchAll(/^event: (\S+)$/gm)) log.push(m[1] ?? '');
      return true;
    },
    onWritable: () => undefined,
    // As the route's reply does: the stream's last bytes (the terminal event) go out with its end.
    endStream: (last?: string) => {
      for (const m of (last ?? '').matchAll(/^event: (\S+)$/gm)) log.push(m[1] ?? '');
      log.push('end');
    },
    onDrainDeadline: () => undefined,
  };
}

/** A store whose commit the test releases (or fails). */
function heldStore(log: string[]): { finish: FinishResponse; commit(): void; fail(): void } {
  let release: (() => void) | null = null;
  let reject: ((err: Error) => void) | null = null;
  return {
    finish: (state: ResponseState) =>
      new Promise<void>((resolve, fail) => {
        log.push(`store ${state.status}`);
        release = () => {
          log.push('committed');
          resolve();
        };
        reject = fail;
      }),
    commit: () => release?.(),
    fail: () => reject?.(new Error('store down')),
  };
}

const header = { id: 'resp_1', createdAt: 1, model: 'm', request: parseResponseRequest({ model: 'm', input: 'hi' }), store: true, conversationId: null, background: false, namespaces: new Map<string, string>() };
let n = 0;
const newId = (prefix: string) => `${prefix}${++n}`;
const completion = { id: 'c', object: 'chat.completion', created: 1, model: 'm', choices: [{ index: 0, finish_reason: 'stop', message: { role: 'assistant', content: 'hello' } }], usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } };
const chunk = (delta: Record<string, unknown>, finish: string | null = null) => `data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;

describe('ResponsesReply and the store', () => {
  it('answers the Response JSON only after its row is committed', async () => {
    const out = sink();
    const store = heldStore(out.log);
    const reply = new ResponsesReply(out, header, newId, store.finish);
    reply.json(200, completion);
    await Promise.resolve();
    expect(out.log).toEqual(['store completed']);
    store.commit();
    await reply.settled();
    expect(out.log).toEqual(['store completed', 'committed', 'json 200']);
  });

  it('writes the terminal event and ends the stream after the commit, the deltas read before the end at once', async () => {
    const out = sink();
    const store = heldStore(out.log);
    const reply = new ResponsesReply(out, header, newId, store.finish);
    reply.beginStream(200, 'text/event-stream');
    reply.write(chunk({ role: 'assistant', content: 'hel' }));
    expect(out.log).toContain('response.output_text.delta');
    // The read that brings the end: its delta waits for the terminal event (one socket write, issue 35).
    reply.write(chunk({ content: 'lo' }, 'stop') + 'data: [DONE]\n\n');
    reply.endStream();
    await new Promise((resolve) => setImmediate(resolve));
    expect(out.log).toContain('store completed');
    expect(out.log.filter((e) => e === 'response.output_text.delta')).toHaveLength(1);
    expect(out.log).not.toContain('end');
    expect(out.log).not.toContain('response.completed');
    store.commit();
    await reply.settled();
    // The last delta, the items' closing events and the terminal one, then the end: all after the commit.
    expect(out.log.slice(out.log.indexOf('committed'))).toEqual(['committed', 'response.output_text.delta', 'response.output_text.done', 'response.content_part.done', 'response.output_item.done', 'response.completed', 'end']);
  });

  it('answers a billed turn whose storing failed with its Response marked store: false, streamed or not (was: no answer, and a retryable 503)', async () => {
    const answered: string[] = [];
    const out = { ...sink(), jsonText: (status: number, text: string) => void answered.push(`${status} ${text}`) };
    const store = heldStore(out.log);
    const reply = new ResponsesReply(out, header, newId, store.finish);
    reply.json(200, completion);
    store.fail();
    await reply.settled();
    expect((reply.storeError as Error).message).toBe('store down');
    expect(answered).toHaveLength(1);
    expect(answered[0]?.startsWith('200 ')).toBe(true);
    expect(JSON.parse(answered[0]?.slice(4) ?? '{}')).toMatchObject({ status: 'completed', store: false });

    const streamed = sink();
    const failing = heldStore(streamed.log);
    const streamReply = new ResponsesReply(streamed, header, newId, failing.finish);
    streamReply.beginStream(200, 'text/event-stream');
    streamReply.write('data: [DONE]\n\n');
    streamReply.endStream();
    failing.fail();
    await streamReply.settled();
    expect(streamed.log.slice(-2)).toEqual(['response.completed', 'end']);
  });

  it('leaves a background response whose storing failed to settled(): its client reads the stored row', async () => {
    const out = sink();
    const store = heldStore(out.log);
    const reply = new ResponsesReply(out, { ...header, background: true }, newId, store.finish);
    reply.json(200, completion);
    store.fail();
    await expect(reply.settled()).rejects.toThrow('store down');
    expect(out.log).toEqual(['store completed']);
  });
});

describe('the stored body', () => {
  it('is handed to the store as the text the answer carries, streamed or not', async () => {
    const seen: { body: Record<string, unknown>; text: string | undefined }[] = [];
    const finish: FinishResponse = async (_state, body, bodyJson) => void seen.push({ body, text: bodyJson });
    const answered: string[] = [];
    const out = { ...sink(), jsonText: (_status: number, text: string) => void answered.push(text), endStream: (last?: string) => void answered.push(last ?? '') };

    const plain = new ResponsesReply(out, header, newId, finish);
    plain.json(200, completion);
    await plain.settled();
    const streamed = new ResponsesReply(out, header, newId, finish);
    streamed.beginStream(200, 'text/event-stream');
    streamed.endStream(chunk({ role: 'assistant', content: 'hi' }, 'stop') + 'data: [DONE]\n\n');
    await streamed.settled();

    expect(seen).toHaveLength(2);
    for (const s of seen) expect(s.text).toBe(JSON.stringify(s.body));
    expect(answered[0]).toBe(seen[0]?.text);
    expect(answered[1]).toContain(`"response":${seen[1]?.text}}`);
  });
});

describe('ResponsesReply socket writes (issue 35)', () => {
  /** Each write and the end, as the events each carries. */
  function counting(): { sink: TurnSink; calls: string[][] } {
    const calls: string[][] = [];
    const events = (text: string): string[] => [...text.matchAll(/^event: (\S+)$/gm)].map((m) => m[1] ?? '');
    const base = sink();
    return {
      calls,
      sink: { ...base, write: (c: string | Buffer) => (calls.push(['write', ...events(c.toString())]), true), endStream: (last?: string) => void calls.push(['end', ...events(last ?? '')]) },
    };
  }

  it('sends a turn whose last read brings the whole answer in one write with the end, opening events included', async () => {
    const { sink: out, calls } = counting();
    const reply = new ResponsesReply(out, header, newId, async () => undefined);
    reply.beginStream(200, 'text/event-stream');
    reply.endStream(chunk({ role: 'assistant', content: 'hel' }) + chunk({ content: 'lo' }, 'stop') + 'data: [DONE]\n\n');
    await reply.settled();
    expect(calls).toEqual([
      ['end', 'response.created', 'response.in_progress', 'response.output_item.added', 'response.content_part.added', 'response.output_text.delta', 'response.output_text.delta',
        'response.output_text.done', 'response.content_part.done', 'response.output_item.done', 'response.completed'],
    ]);
  });

  it('sends the opening events with the first chunk that follows in the same I/O phase', () => {
    const { sink: out, calls } = counting();
    const reply = new ResponsesReply(out, header, newId, async () => undefined);
    reply.beginStream(200, 'text/event-stream');
    reply.write(chunk({ role: 'assistant', content: 'hel' }));
    expect(calls).toEqual([['write', 'response.created', 'response.in_progress', 'response.output_item.added', 'response.content_part.added', 'response.output_text.delta']]);
  });

  it('sends the opening events on their own once the I/O phase is over when no chunk came (a model still thinking)', async () => {
    const { sink: out, calls } = counting();
    const reply = new ResponsesReply(out, header, newId, async () => undefined);
    reply.beginStream(200, 'text/event-stream');
    expect(calls).toEqual([]);
    await new Promise((resolve) => setImmediate(resolve));
    expect(calls).toEqual([['write', 'response.created', 'response.in_progress']]);
    reply.write(chunk({ role: 'assistant', content: 'hel' }));
    expect(calls[1]).toEqual(['write', 'response.output_item.added', 'response.content_part.added', 'response.output_text.delta']);
  });
});

describe('the output_text.delta frame, written by hand', () => {
  it.each([
    ['plain text', ' word7', []],
    ['quotes, backslashes, controls and non-ASCII', 'caf\u00e9 "q" \\ \t\u0001 \u2028 \ud83d\ude00', []],
    ['token logprobs', 'x', [{ token: 'x', logprob: -0.25, bytes: [120], top_logprobs: [] }]],
  ])('is the bytes JSON.stringify makes of the event: %s', (_label, delta, logprobs) => {
    const event = { type: 'response.output_text.delta', sequence_number: 12, item_id: 'msg_0a1b"c', output_index: 1, content_index: 0, delta, logprobs };
    expect(frame(event)).toBe(`event: response.output_text.delta\ndata: ${JSON.stringify(event)}\n\n`);
  });
});

describe('the frames of a message turn, written by hand (issue 35)', () => {
  // Every event a translator makes of these turns: text with every kind of character, token logprobs,
  // text then a tool call, a refusal-free finish; each frame must be the bytes JSON.stringify makes.
  const texts = ['hello', 'caf\u00e9 "q" \\ \t\u0001 \u2028 \ud83d\ude00', ''];
  const turns: Record<string, unknown>[][] = [
    texts.map((content) => ({ choices: [{ index: 0, delta: { content }, finish_reason: null }] })),
    [{ choices: [{ index: 0, delta: { content: 'x' }, logprobs: { content: [{ token: 'x', logprob: -0.25, bytes: [120], top_logprobs: [] }] }, finish_reason: null }] }],
    [
      { choices: [{ index: 0, delta: { content: 'calling' }, finish_reason: null }] },
      { choices: [{ index: 0, delta: { tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'f', arguments: '{"a":1}' } }] }, finish_reason: 'tool_calls' }] },
    ],
  ];

  it.each(turns.map((chunks, i) => [i, chunks] as const))('are the bytes JSON.stringify makes of each event (turn %i)', (_i, chunks) => {
    let ids = 0;
    const translator = new ResponseStreamTranslator((prefix) => `${prefix}"${++ids}`);
    const events = [...translator.start(), ...chunks.flatMap((c) => translator.chunk(c)), ...translator.finish().events];
    expect(events.length).toBeGreaterThan(4);
    for (const event of events) expect(frame(event)).toBe(`event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`);
  });

  it('leaves an event of another shape to JSON.stringify', () => {
    const odd = [
      { type: 'response.output_item.done', sequence_number: 3, output_index: 0, item: { type: 'message', id: 'm', status: 'completed', role: 'assistant', content: [{ type: 'refusal', refusal: 'no' }] } },
      { type: 'response.output_item.done', sequence_number: 3, output_index: 0, item: { type: 'message', id: 'm', status: 'completed', role: 'assistant', content: [], extra: 1 } },
      { type: 'response.content_part.done', sequence_number: 3, item_id: 'm', output_index: 0, content_index: 0, part: { type: 'output_text', text: 't', annotations: [{ type: 'url_citation' }], logprobs: [] } },
      { type: 'response.output_text.done', sequence_number: 3, item_id: 'm', output_index: 0, content_index: 0, text: 't' },
      { type: 'response.output_text.delta', sequence_number: 1.5, item_id: 'm', output_index: 0, content_index: 0, delta: 'd', logprobs: [] },
    ];
    for (const event of odd) expect(frame(event)).toBe(`event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`);
  });
});

describe('an event carrying a Response serialized once', () => {
  it('is the bytes JSON.stringify makes of the event', () => {
    const response = { id: 'resp_"1', object: 'response', status: 'in_progress', output: [], metadata: { k: 'v\u2028' } };
    for (const event of [{ type: 'response.created', sequence_number: 0, response }, { type: 'response.in_progress', sequence_number: 1, response }]) {
      expect(responseEventFrame(event, JSON.stringify(response))).toBe(frame(event));
    }
  });
});

describe('the content-only fast path (issue 35)', () => {
  const head = '{"id":"chatcmpl-req_1","object":"chat.completion.chunk","created":1700000000,"model":"model-\\"q\\"","service_tier":"default"';
  const choice = (delta: string, rest = '"logprobs":null,"finish_reason":null'): string => `"choices":[{"index":0,"delta":${delta},${rest}}]`;
  const plain = [
    `${head},${choice('{"content":"hello"}')}}`,
    `${head},${choice('{"role":"assistant","content":"hi \\"there\\"\\n\\u00e9\\\\"}')}}`,
    `${head},${choice('{"content":"x"}', '"logprobs":null,"finish_reason":null,"stop_reason":null')},"usage":null}`,
    `${head},"x_adjusted_reasoning_effort":"low",${choice('{"content":"ünïcödé 😀"}')}}`,
    `${head},${choice('{"content":""}')}}`,
  ];
  const parsed = [
    `${head},${choice('{"content":"end"}', '"logprobs":null,"finish_reason":"stop"')}}`,
    `${head},${choice('{"content":"lp"}', '"logprobs":{"content":[{"token":"lp","logprob":-0.1,"bytes":null,"top_logprobs":[]}]},"finish_reason":null')}}`,
    `${head},${choice('{"content":"u"}')},"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`,
    `${head},${choice('{"tool_calls":[{"index":0,"id":"c","type":"function","function":{"name":"f","arguments":""}}]}')}}`,
    `${head},${choice('{"reasoning_content":"think"}')}}`,
  ];

  it('reads the content text of a chunk that carries nothing else, as JSON.parse reads it', () => {
    for (const data of plain) {
      const chunk = JSON.parse(data) as { choices: { delta: { content: string } }[] };
      expect(contentOnlyText(data)).toBe(chunk.choices[0]?.delta.content);
    }
  });

  it('leaves every other chunk to the full parse', () => {
    for (const data of parsed) expect(contentOnlyText(data)).toBeNull();
  });

  it('makes the same frames of content text handed over by the chat stream as of its chat frame', () => {
    const frames = (via: 'frame' | 'reshaper'): string => {
      const out: string[] = [];
      const s = { ...sink(), write: (c: string | Buffer) => (out.push(c.toString()), true) };
      let ids = 0;
      const reply = new ResponsesReply(s, header, (prefix) => `${prefix}${++ids}`, async () => undefined);
      reply.beginStream(200, 'text/event-stream');
      for (const d of plain) {
        const escaped = /"content":"((?:[^"\\]|\\.)*)"/.exec(d)?.[1] ?? '';
        if (via === 'frame') reply.write(`data: ${d}\n\n`);
        else reply.reshaper.write(reply.reshaper.content(escaped) ?? 'unreadable');
      }
      return out.join('');
    };
    expect(frames('reshaper')).toBe(frames('frame'));
    expect(frames('reshaper')).toContain('"delta":"hi \\"there\\"\\né\\\\"');
  });

  it('ends the Response failed, after the text it delivered, when the chat stream hands over an error frame', async () => {
    const calls: string[] = [];
    const out = { ...sink(), write: (c: string | Buffer) => (calls.push(c.toString()), true), endStream: (last?: string) => void calls.push(last ?? '') };
    const stored: ResponseState[] = [];
    const reply = new ResponsesReply(out, header, newId, async (state) => void stored.push(state));
    reply.beginStream(200, 'text/event-stream');
    const frames = (reply.reshaper.content('par') ?? '') + reply.reshaper.translate('data: {"error":{"message":"The connection to the model server failed mid-stream.","type":"server_error","code":"internal_error","param":null}}\n\ndata: [DONE]\n\n');
    reply.reshaper.end(frames);
    await reply.settled();
    const events = [...calls.join('').matchAll(/^event: (\S+)$/gm)].map((m) => m[1]);
    expect(events.at(-1)).toBe('response.failed');
    expect(events).toContain('response.output_text.delta');
    expect(stored).toEqual([expect.objectContaining({ status: 'failed', error: { code: 'internal_error', message: 'The connection to the model server failed mid-stream.' } })]);
    expect(stored[0]?.output).toEqual([expect.objectContaining({ type: 'message', content: [expect.objectContaining({ text: 'par' })] })]);
  });

  it('makes the same frames and outcome of the finish and usage chunks handed over as objects as of their chat frames', async () => {
    const run = async (via: 'frame' | 'reshaper'): Promise<{ out: string; state: ResponseState | undefined }> => {
      const out: string[] = [];
      const s = { ...sink(), write: (c: string | Buffer) => (out.push(c.toString()), true), endStream: (last?: string) => void out.push(last ?? '') };
      let ids = 0;
      let state: ResponseState | undefined;
      const reply = new ResponsesReply(s, header, (prefix) => `${prefix}${++ids}`, async (st) => void (state = st));
      reply.beginStream(200, 'text/event-stream');
      const finish = { index: 0, delta: {}, logprobs: null, finish_reason: 'length' };
      const usage = { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5, prompt_tokens_details: { cached_tokens: 1, audio_tokens: null } };
      if (via === 'frame') {
        reply.write(chunk({ content: 'ab' }) + `data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [finish] })}\n\n`);
        reply.write(`data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [], usage })}\n\ndata: [DONE]\n\n`);
        reply.endStream();
      } else {
        const shaper = reply.reshaper;
        shaper.write((shaper.content('ab') ?? '') + shaper.chunk({ choices: [finish] }));
        shaper.end(shaper.chunk({ choices: [], usage }) + shaper.translate('data: [DONE]\n\n'));
      }
      await reply.settled();
      return { out: out.join(''), state };
    };
    const [framed, shaped] = [await run('frame'), await run('reshaper')];
    expect(shaped).toEqual(framed);
    expect(shaped.state).toMatchObject({ status: 'incomplete', usage: { input_tokens: 3, output_tokens: 2 } });
  });

  it('leaves content text that is not valid JSON string text to the chat frame (null)', () => {
    const reply = new ResponsesReply(sink(), header, newId, async () => undefined);
    expect(reply.reshaper.content('bad \\x escape')).toBeNull();
  });

  it('writes the same frames for a stream as the full parse does', () => {
    const frames = (fast: boolean): string => {
      const out: string[] = [];
      const s = { ...sink(), write: (c: string | Buffer) => (out.push(c.toString()), true) };
      let ids = 0;
      const reply = new ResponsesReply(s, header, (prefix) => `${prefix}${++ids}`, async () => undefined);
      reply.beginStream(200, 'text/event-stream');
      // The slow path: the same chunk with its members reordered, which the fast path's pattern cannot match.
      const reorder = (d: string): string => JSON.stringify(Object.fromEntries(Object.entries(JSON.parse(d) as object).reverse()));
      for (const d of [...plain, parsed[0] as string]) reply.write(`data: ${fast ? d : reorder(d)}\n\n`);
      return out.join('');
    };
    expect(frames(true)).toBe(frames(false));
    expect(frames(true)).toContain('"delta":"hi \\"there\\"\\né\\\\"');
  });
});
