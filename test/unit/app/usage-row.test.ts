/**
 * The usage ledger's row has one constructor (issue 33, src/app/usage-row.ts): each field's rule, and that
 * every use case bills through it. The guard is the type: the ledger records only a BilledRow, which a
 * hand-built literal is not (checked at compile time, tsconfig.test.json); the source scan makes sure no
 * file of src/ casts its way around it and that every `usage.record(` of src/ is handed `usageRow(...)`.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { afterEach, describe, expect, expectTypeOf, it, vi } from 'vitest';
import { usageRow, type UsageRowInput } from '../../../src/app/usage-row.js';
import type { UsageLedger, UsageRow } from '../../../src/store/usage-ledger.js';
import { UpstreamAbort } from '../../../src/upstream/upstream-client.js';

const SRC = resolve(import.meta.dirname, '../../../src');

const base: UsageRowInput = {
  requestId: 'chatcmpl-1',
  account: { projectId: 'proj_a', workspaceId: 'ws_1', keyId: 'key_1' },
  endpointId: 'ep_1',
  route: 'chat',
  lane: 'flex',
  multiplier: 0.5,
  outcome: 'completed',
  usage: { promptTokens: 10, completionTokens: 5, cachedTokens: 2, reasoningTokens: 3, source: 'upstream' },
  started: 1000,
  createdAt: 1_700_000_000_000,
  call: null,
  ttftMs: undefined,
  errorCode: null,
};

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return sourceFiles(path);
    return e.name.endsWith('.ts') ? [path] : [];
  });
}

describe('usageRow, the one constructor of the ledger row', () => {
  afterEach(() => vi.restoreAllMocks());

  it('names every field, in one order, from what the use case passed', () => {
    vi.spyOn(performance, 'now').mockReturnValue(1250);
    const row = usageRow(base);
    expect(Object.keys(row)).toEqual([
      'requestId', 'projectId', 'workspaceId', 'endpointId', 'keyId', 'route', 'promptTokens', 'completionTokens', 'cachedTokens', 'reasoningTokens',
      'serviceTier', 'tierMultiplier', 'status', 'usageSource', 'latencyMs', 'createdAt', 'ttftMs', 'errorCode', 'upstreamServer', 'retries',
    ]);
    expect(row).toEqual({
      requestId: 'chatcmpl-1', projectId: 'proj_a', workspaceId: 'ws_1', endpointId: 'ep_1', keyId: 'key_1', route: 'chat',
      promptTokens: 10, completionTokens: 5, cachedTokens: 2, reasoningTokens: 3, serviceTier: 'flex', tierMultiplier: 0.5,
      status: 'completed', usageSource: 'upstream', latencyMs: 250, createdAt: 1_700_000_000_000,
      ttftMs: null, errorCode: null, upstreamServer: null, retries: null,
    });
  });

  it('bills nothing counted as zero tokens, estimated', () => {
    expect(usageRow({ ...base, outcome: 'error', usage: null })).toMatchObject({ promptTokens: 0, completionTokens: 0, cachedTokens: 0, reasoningTokens: null, usageSource: 'estimated' });
  });

  it('takes the audio and embedding usage shapes as they are (what they do not count is 0, reasoning null)', () => {
    expect(usageRow({ ...base, usage: { promptTokens: 7, completionTokens: 4, source: 'estimated' } })).toMatchObject({ promptTokens: 7, completionTokens: 4, cachedTokens: 0, reasoningTokens: null, usageSource: 'estimated' });
    expect(usageRow({ ...base, usage: { promptTokens: 9, source: 'upstream' } })).toMatchObject({ promptTokens: 9, completionTokens: 0, cachedTokens: 0, usageSource: 'upstream' });
  });

  it('keeps an error code on error and timeout rows only; a timeout without one is `timeout`', () => {
    const code = (outcome: UsageRowInput['outcome'], errorCode: string | null): string | null | undefined => usageRow({ ...base, outcome, errorCode }).errorCode;
    expect(code('error', 'upstream_error')).toBe('upstream_error');
    expect(code('error', null)).toBeNull();
    expect(code('timeout', null)).toBe('timeout');
    expect(code('timeout', 'timeout')).toBe('timeout');
    expect(code('completed', 'upstream_error')).toBeNull();
    expect(code('aborted', 'upstream_error')).toBeNull();
    expect(code('drained', 'service_draining')).toBeNull();
  });

  it('reads the upstream server and retries from the call signal, and the time to first byte when measured', () => {
    const call = new UpstreamAbort();
    expect(usageRow({ ...base, call })).toMatchObject({ upstreamServer: null, retries: 0 });
    call.server = 'http://10.0.0.2:8000';
    call.retries = 2;
    expect(usageRow({ ...base, call, ttftMs: 42 })).toMatchObject({ upstreamServer: 'http://10.0.0.2:8000', retries: 2, ttftMs: 42 });
    expect(usageRow({ ...base, call: null, ttftMs: null })).toMatchObject({ upstreamServer: null, retries: null, ttftMs: null });
  });

  it('is the only way to a row the ledger records (compile-time: tsconfig.test.json)', () => {
    const handBuilt: UsageRow = { ...usageRow(base) };
    expectTypeOf(usageRow(base)).toExtend<Parameters<UsageLedger['record']>[0]>();
    expectTypeOf(handBuilt).not.toExtend<Parameters<UsageLedger['record']>[0]>();
  });

  it('is what every use case bills through: no cast to BilledRow in src/, every usage.record(...) given usageRow(...)', () => {
    const casts: string[] = [];
    const handRows: string[] = [];
    const callers: string[] = [];
    for (const file of sourceFiles(SRC)) {
      const name = relative(SRC, file);
      const text = readFileSync(file, 'utf8');
      if (name !== 'app/usage-row.ts' && /\bas\s+BilledRow\b|<BilledRow>/.test(text)) casts.push(name);
      for (const m of text.matchAll(/\busage\.record\(\s*([A-Za-z_$][\w$]*)?/g)) {
        if (m[1] === 'usageRow') callers.push(name);
        else handRows.push(name);
      }
    }
    expect(casts).toEqual([]);
    expect(handRows).toEqual([]);
    // The six use cases of issue 33 (audio-call.ts bills audio, speech, transcription and realtime).
    expect(new Set(callers)).toEqual(
      new Set([
        'app/chat/chat-dispatch.ts',
        'app/responses/responses-passthrough.ts',
        'app/chat/chat-harness-call.ts',
        'app/multimodel/multimodel-dispatch.ts',
        'app/audio/audio-call.ts',
        'app/prompt-only/prompt-only-call.ts',
      ]),
    );
  });
});
