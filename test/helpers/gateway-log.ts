/** The gateway's stdout as parsed JSON log lines (pino), for tests that check what the operator sees. */
import type { GatewayProcess } from './processes.js';

export interface LogLine {
  readonly level: number;
  readonly msg: string;
  readonly [field: string]: unknown;
}

export function logLines(gw: GatewayProcess): LogLine[] {
  return gw.stdout
    .join('')
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as LogLine);
}

/** pino levels: 40 warn, 50 error. */
export const WARN = 40;
export const ERROR = 50;

export async function waitForLog(gw: GatewayProcess, predicate: (l: LogLine) => boolean, timeoutMs = 5000): Promise<LogLine> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const found = logLines(gw).find(predicate);
    if (found) return found;
    if (Date.now() > until) throw new Error('the gateway never logged the expected line');
    await new Promise((r) => setTimeout(r, 25));
  }
}
