/**
 * Structured JSON logs (pino). One line per request from the composition root; never a key value or
 * prompt text. Writes go through an asynchronous destination so logging never blocks the event loop.
 */
import pino, { type Logger } from 'pino';

export type { Logger };

/**
 * Lines are buffered up to 4 KiB (one write syscall per ~15 request lines instead of one per line) and
 * flushed at least every FLUSH_MS, so a quiet server still shows its logs promptly.
 */
const FLUSH_MS = 250;

export function createLogger(level: string | undefined): Logger {
  const destination = pino.destination({ dest: 1, sync: false, minLength: 4096 });
  setInterval(() => destination.flush(), FLUSH_MS).unref();
  const logger = pino(
    { level: level ?? process.env.SWITCHBOARD_LOG_LEVEL ?? 'info', base: { service: 'switchboard' }, timestamp: pino.stdTimeFunctions.isoTime },
    destination,
  );
  return logger;
}

/** Flushes buffered lines; call before exiting. */
export function flushLogger(logger: Logger): void {
  try {
    logger.flush();
  } catch {
    // a closed stdout must not turn a clean shutdown into a crash
  }
}
