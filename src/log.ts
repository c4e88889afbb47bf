/**
 * Structured JSON logs (pino). One line per request from the composition root; never a key value or
 * prompt text. Writes go through an asynchronous destination so logging never blocks the event loop.
 */
import pino, { type Logger } from 'pino';

export type { Logger };

export function createLogger(level: string | undefined): Logger {
  const destination = pino.destination({ dest: 1, sync: false });
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
