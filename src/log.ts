/**
 * Structured JSON logs (pino). One line per request from the composition root (src/access-line.ts); never
 * a key value or prompt text. Writes go through an asynchronous destination so logging never blocks the
 * event loop.
 */
import pino, { type Logger } from 'pino';
import { ConfigError } from './config-error.js';
import { isLogLevel, LOG_LEVELS, type LogLevel } from './log-levels.js';
import { LogSink } from './log-sink.js';

export type { Logger };

/**
 * The level a gateway logs at: the config file's, else SWITCHBOARD_LOG_LEVEL, else info. The variable is
 * checked whenever it is set, as the file's field is, so a typo is a start refused with exit 2 naming it
 * (a supervisor must not restart into the same failure), not pino's bare error and exit 1. Empty counts as
 * unset (an EnvironmentFile line `SWITCHBOARD_LOG_LEVEL=`); case is ignored, as pino ignored it before.
 */
export function logLevelOf(configured: LogLevel | undefined, env: NodeJS.ProcessEnv = process.env): LogLevel {
  const raw = env.SWITCHBOARD_LOG_LEVEL?.trim().toLowerCase();
  if (raw !== undefined && raw !== '' && !isLogLevel(raw)) {
    throw new ConfigError(`SWITCHBOARD_LOG_LEVEL: ${JSON.stringify(env.SWITCHBOARD_LOG_LEVEL)} is not a log level: use one of ${LOG_LEVELS.join(', ')}, or unset it`);
  }
  return configured ?? (raw === undefined || raw === '' ? 'info' : raw);
}

/** How often buffered lines are written out, so a quiet server still shows its logs promptly. */
const FLUSH_MS = 250;

/** Sinks holding lines not yet written: written out synchronously if the process exits. */
const sinks = new Set<LogSink>();
process.once('exit', () => {
  for (const sink of sinks) sink.flushSync();
});

/** Every line, pino's and the access lines of src/access-line.ts, goes to stdout through one LogSink (log-sink.ts). */
export function createLogger(configured: LogLevel | undefined): Logger {
  const level = logLevelOf(configured);
  const sink = new LogSink(1);
  sinks.add(sink);
  setInterval(() => sink.flush(), FLUSH_MS).unref();
  return pino({ level, base: { service: 'switchboard' }, timestamp: isoTime }, sink);
}

let second = NaN;
let secondPrefix = '';

/**
 * pino's `stdTimeFunctions.isoTime` (`,"time":"2026-11-23T22:52:17.042Z"`), without a Date and its
 * formatting on every line: the text up to the second is kept until the second changes (at 10,000 lines a
 * second the access line otherwise paid about 1 us for it).
 */
export function isoTime(now: number = Date.now()): string {
  const ms = now % 1000;
  if (now - ms !== second) {
    second = now - ms;
    secondPrefix = ',"time":"' + new Date(second).toISOString().slice(0, 20);
  }
  return secondPrefix + (ms < 10 ? '00' : ms < 100 ? '0' : '') + ms + 'Z"';
}

/** Flushes buffered lines; call before exiting. */
export function flushLogger(logger: Logger): void {
  try {
    logger.flush();
  } catch {
    // a closed stdout must not turn a clean shutdown into a crash
  }
}
