/**
 * The access line: one JSON line per finished request, with what operators search by (request id, route
 * family, project, endpoint, model, key id, client address, status, error code, latencies, tokens); never
 * a key value or prompt text.
 *
 * Issue 17 holds the line at info to 10% of a request's CPU. pino's generic path walks an object of
 * mostly absent fields, stringifies each value on its own and formats a fresh ISO time; here the line is
 * one string built in a fixed field order, numbers written as they are, strings copied as they are unless
 * they hold a character JSON must escape. The bytes are the ones pino wrote for the same fields (same
 * prefix, names, order and `"msg":"request"`), and they go to pino's own destination, so an access line and
 * any other log line never interleave mid-line.
 */
import pino, { type Logger } from 'pino';
import type { RequestLog } from './http/request.js';

/** What the line is built from: the server's CompletedRequest has this shape. */
export interface FinishedRequest {
  readonly req: { readonly requestId: string; readonly method: string; readonly path: string; readonly log: RequestLog };
  readonly family: string;
  readonly status: number;
  readonly durationMs: number;
  readonly aborted: boolean;
}

/**
 * The fields of the line after pino's prefix (level, time, bindings) and before `"msg"`: each starts with
 * a comma; absent ones are left out, as pino leaves out undefined values.
 */
export function accessFields(done: FinishedRequest, model: string | undefined): string {
  const { req } = done;
  const log = req.log;
  let s = ',"request_id":' + str(req.requestId) + ',"method":' + str(req.method) + ',"family":' + str(done.family);
  // Unmatched paths are the ones an operator needs to see (a client with a wrong base URL).
  if (done.family === 'unmatched') s += ',"path":' + str(req.path);
  if (log.project !== undefined) s += ',"project":' + str(log.project);
  if (log.endpoint !== undefined) s += ',"endpoint":' + str(log.endpoint);
  if (model !== undefined) s += ',"model":' + str(model);
  if (log.keyId !== undefined) s += ',"key_id":' + str(log.keyId);
  if (log.clientIp !== undefined) s += ',"client_ip":' + str(log.clientIp);
  s += ',"status":' + num(done.status);
  if (log.errorCode !== undefined) s += ',"error_code":' + str(log.errorCode);
  if (done.aborted) s += ',"aborted":true';
  s += ',"latency_ms":' + num(roundMs(done.durationMs));
  if (log.upstreamMs !== undefined) s += ',"upstream_ms":' + num(roundMs(log.upstreamMs));
  if (log.ttftMs !== undefined) s += ',"ttft_ms":' + num(roundMs(log.ttftMs));
  if (log.promptTokens !== undefined) s += ',"prompt_tokens":' + num(log.promptTokens);
  if (log.completionTokens !== undefined) s += ',"completion_tokens":' + num(log.completionTokens);
  return s;
}

/** Writes access lines through `logger`'s level, prefix and destination. */
export interface AccessLog {
  write(done: FinishedRequest, model: string | undefined): void;
}

const writers = new WeakMap<Logger, AccessLog>();

/**
 * The access writer of a pino logger, made once per logger. Its level is read on every line, so a logger
 * set to warn or above writes none (and the caller can skip its own work by asking `enabled` first).
 */
export function accessLogOf(logger: Logger): AccessLog {
  let writer = writers.get(logger);
  if (!writer) writers.set(logger, (writer = createAccessLog(logger)));
  return writer;
}

/** pino's internals the line reuses: the documented `pino.symbols` keys of a logger instance. */
interface PinoInternals {
  [pino.symbols.streamSym]: { write(line: string): unknown };
  [pino.symbols.timeSym]: () => string;
  [pino.symbols.chindingsSym]: string;
}

function createAccessLog(logger: Logger): AccessLog {
  const internals = logger as unknown as PinoInternals;
  const time = internals[pino.symbols.timeSym];
  const level = logger.levels.values.info ?? 30;
  return {
    write(done, model) {
      if (!logger.isLevelEnabled('info')) return;
      // Read per line, as pino does: a child logger or a rebinding changes them.
      const line = '{"level":' + level + time() + internals[pino.symbols.chindingsSym] + accessFields(done, model) + ',"msg":"request"}\n';
      internals[pino.symbols.streamSym].write(line);
    },
  };
}

/** Characters a JSON string must escape (controls, quote, backslash), and surrogates, which may be lone. */
const NEEDS_ESCAPE = /[\u0000-\u001f"\\\ud800-\udfff]/;

/** A JSON string: copied between quotes, or through JSON.stringify when something in it needs escaping. */
export function str(s: string): string {
  return NEEDS_ESCAPE.test(s) ? JSON.stringify(s) : '"' + s + '"';
}

/** A JSON number; NaN and the infinities as null, as JSON.stringify (and pino) write them. */
function num(n: number): string {
  return Number.isFinite(n) ? '' + n : 'null';
}

const roundMs = (ms: number): number => Math.round(ms * 100) / 100;
