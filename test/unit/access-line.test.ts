import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { accessFields, accessLogOf, type FinishedRequest } from '../../src/access-line.js';
import type { RequestLog } from '../../src/http/request.js';
import { isoTime } from '../../src/log.js';

function finished(log: RequestLog, over: Partial<Omit<FinishedRequest, 'req'>> & { path?: string } = {}): FinishedRequest {
  return {
    req: { requestId: 'chatcmpl-0a1b2c3d4e5f60718293a4b5', method: 'POST', path: over.path ?? '/proj_x/chat/v1/chat/completions', log },
    family: over.family ?? 'chat',
    status: over.status ?? 200,
    durationMs: over.durationMs ?? 2.91349,
    aborted: over.aborted ?? false,
  };
}

/** What the line said when pino's logger.info built it from an object (before issue 17): the reference. */
function pinoLine(done: FinishedRequest, model: string | undefined, time: string): string {
  const out: string[] = [];
  const logger = pino({ level: 'info', base: { service: 'switchboard' }, timestamp: () => time }, { write: (s: string) => void out.push(s) });
  const round = (ms: number | undefined): number | undefined => (ms === undefined ? undefined : Math.round(ms * 100) / 100);
  const log = done.req.log;
  logger.info(
    {
      request_id: done.req.requestId,
      method: done.req.method,
      family: done.family,
      path: done.family === 'unmatched' ? done.req.path : undefined,
      project: log.project,
      endpoint: log.endpoint,
      model,
      key_id: log.keyId,
      client_ip: log.clientIp,
      status: done.status,
      error_code: log.errorCode,
      aborted: done.aborted || undefined,
      latency_ms: round(done.durationMs),
      upstream_ms: round(log.upstreamMs),
      ttft_ms: round(log.ttftMs),
      prompt_tokens: log.promptTokens,
      completion_tokens: log.completionTokens,
    },
    'request',
  );
  return out.join('');
}

function lineOf(done: FinishedRequest, model: string | undefined, time: string, level = 'info'): string[] {
  const out: string[] = [];
  const logger = pino({ level, base: { service: 'switchboard' }, timestamp: () => time }, { write: (s: string) => void out.push(s) });
  accessLogOf(logger).write(done, model);
  return out;
}

const SERVED: RequestLog = { project: 'proj_x', endpoint: 'chat', keyId: 'key_1', clientIp: '127.0.0.1', upstreamMs: 1.23456, ttftMs: 0.5, promptTokens: 12, completionTokens: 20 };

describe('the access line', () => {
  it('is byte for byte the line pino wrote for the same fields, in the same order', () => {
    const time = ',"time":"2026-11-23T22:52:17.042Z"';
    const cases: [FinishedRequest, string | undefined][] = [
      [finished(SERVED), 'gpt-x'],
      [finished({}, { family: 'unmatched', status: 404, path: '/nowhere' }), undefined],
      [finished({ project: 'proj_x', errorCode: 'rate_limit_exceeded', keyId: 'key_1' }, { status: 429, aborted: true }), undefined],
      [finished({ project: 'pr"oj\\x', endpoint: 'ché\n\u0001', promptTokens: 0, completionTokens: 0 }), 'm\u2028😀'],
    ];
    for (const [done, model] of cases) expect(lineOf(done, model, time)).toEqual([pinoLine(done, model, time)]);
  });

  it('escapes quotes, backslashes and control characters, and keeps non-ASCII text as it is', () => {
    const line = lineOf(finished({ project: 'a"b\\c', endpoint: 'tab\there\u0000' }, { family: 'unmatched', path: '/projé/😀/v1' }), 'modèle', '')[0] ?? '';
    expect(line).toContain('"project":"a\\"b\\\\c"');
    expect(line).toContain('"endpoint":"tab\\there\\u0000"');
    expect(line).toContain('"path":"/projé/😀/v1"');
    expect(line).toContain('"model":"modèle"');
    expect(JSON.parse(line)).toMatchObject({ project: 'a"b\\c', endpoint: 'tab\there\u0000', path: '/projé/😀/v1', model: 'modèle' });
  });

  it('writes a lone surrogate as an escape, so the line stays valid UTF-8', () => {
    expect(accessFields(finished({ project: 'x\ud800y' }), undefined)).toContain('"project":"x\\ud800y"');
  });

  it('leaves absent optional fields out, and the path of a matched route', () => {
    const fields = JSON.parse(`{${accessFields(finished({}), undefined).slice(1)}}`) as Record<string, unknown>;
    expect(fields).toEqual({ request_id: 'chatcmpl-0a1b2c3d4e5f60718293a4b5', method: 'POST', family: 'chat', status: 200, latency_ms: 2.91 });
  });

  it('writes numbers as numbers, latencies rounded to 0.01 ms, and a non-finite one as null', () => {
    const fields = JSON.parse(`{${accessFields(finished({ ...SERVED, upstreamMs: 1234.5678, promptTokens: 0 }, { durationMs: Number.NaN }), 'm').slice(1)}}`) as Record<string, unknown>;
    expect(fields).toMatchObject({ status: 200, latency_ms: null, upstream_ms: 1234.57, ttft_ms: 0.5, prompt_tokens: 0, completion_tokens: 20 });
  });

  it('writes nothing at warn or above', () => {
    expect(lineOf(finished(SERVED), 'm', '', 'warn')).toEqual([]);
  });
});

describe('isoTime', () => {
  it('formats a time as pino.stdTimeFunctions.isoTime does, across second and millisecond boundaries', () => {
    const start = Date.parse('2026-11-23T23:59:58.990Z');
    for (let t = start; t < start + 2500; t += 7) expect(isoTime(t)).toBe(`,"time":"${new Date(t).toISOString()}"`);
    expect(isoTime(Date.parse('2026-01-01T00:00:00.000Z'))).toBe(',"time":"2026-01-01T00:00:00.000Z"');
    expect(isoTime(Date.parse('2026-01-01T00:00:00.005Z'))).toBe(',"time":"2026-01-01T00:00:00.005Z"');
    expect(isoTime(Date.parse('2026-01-01T00:00:00.050Z'))).toBe(',"time":"2026-01-01T00:00:00.050Z"');
  });
});
