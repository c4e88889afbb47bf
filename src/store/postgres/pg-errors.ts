/**
 * Which `pg` errors mean "PostgreSQL is not reachable now, or did not answer in time" (answered 503
 * store_unavailable, retryable), as opposed to a query the server refused (a bug or a constraint: stays an
 * unexpected error).
 */

/**
 * SQLSTATE classes and codes of a lost or refused connection, of a server shutting down or starting, and
 * of a statement cut by the pool's bounds (pg-store.ts PgTimeouts): 57014 statement_timeout (or a cancel
 * by an operator), 55P03 lock_timeout. The gateway never asks for NOWAIT, the other source of 55P03, so
 * both mean "too slow now"; the transaction was rolled back, and a retry may well pass.
 */
const CONNECTION_SQLSTATE = /^(08|57P0[1-3]|53300|57014|55P03)/;
const SOCKET_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN']);
/** What pg itself throws (no code) when a connection ends or cannot be had in time, or a statement's answer never came (query_timeout). */
const PG_MESSAGES = /Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error|Connection is closed|Query read timeout/;

export function isPostgresUnavailable(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string' && (SOCKET_CODES.has(code) || CONNECTION_SQLSTATE.test(code))) return true;
  if (PG_MESSAGES.test(err.message)) return true;
  // AggregateError of a connect to several addresses (localhost: ::1 and 127.0.0.1), each refused.
  if (err instanceof AggregateError) return err.errors.length > 0 && err.errors.every(isPostgresUnavailable);
  return err.cause !== undefined && isPostgresUnavailable(err.cause);
}
