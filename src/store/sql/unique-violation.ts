/**
 * Whether a statement failed on a unique constraint, as each driver says it: PostgreSQL's SQLSTATE 23505,
 * better-sqlite3's extended result code. A program's write that meets one is rolled back by its runner.
 */
export function isUniqueViolation(err: unknown): boolean {
  if (typeof err !== 'object' || err === null) return false;
  const code = (err as { code?: unknown }).code;
  return code === '23505' || code === 'SQLITE_CONSTRAINT_UNIQUE';
}
