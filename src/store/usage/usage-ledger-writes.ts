/**
 * The ledger's writes, written once for both backends: a batch of rows, a journal segment's rows with its
 * marker, and the markers of segments whose files are gone. The store's writer thread runs them on every
 * batch (both backends), the journal replay and the usage store (usage-store.ts) on demand.
 *
 * The insert is the throughput path, so it is one native step whose SQL both backends generate from the one
 * column list (usage-tables.ts LEDGER_COLUMNS):
 * - SQLite: statements of 32 rows, prepared once per connection (one multi-row statement costs ~1 us a row
 *   less than one a row), then one a row for the rest, then the batch's hourly spend (one upsert per hour
 *   and target: migration 019), all in the caller's transaction.
 * - PostgreSQL: one INSERT a batch over unnest()ed column arrays: 22 parameters whatever the batch size, so
 *   the statement is named (parsed once per connection) and never meets the 65,535-parameter limit; its
 *   statement-level trigger keeps the hourly spend.
 * No query builder is loaded here (sql/fixed-shape.ts says why).
 */
import type { Statement } from 'better-sqlite3';
import { HOUR_MS } from '../../core/limits/budget-caps.js';
import type { LedgerRow } from '../../core/store/usage-store.js';
import { countedTokens } from '../charging-ledger.js';
import { fixedStatement, perConnection } from '../sql/fixed-shape.js';
import { native, type SqlProgram } from '../sql/sql-program.js';
import { LEDGER_COLUMNS, USAGE_COLUMNS, USAGE_SCHEMA } from './usage-tables.js';

const COLUMN_LIST = Object.values(LEDGER_COLUMNS).join(', ');
const ROWS_PER_STATEMENT = 32;

const sqliteInsertText = (rows: number): string =>
  `INSERT INTO usage_events (${COLUMN_LIST}) VALUES ${Array.from({ length: rows }, () => `(${USAGE_COLUMNS.map(() => '?').join(', ')})`).join(', ')}`;

/** Each column's array type, from its declared kind. */
const ARRAY_TYPES = { integer: 'bigint[]', real: 'float8[]', text: 'text[]' } as const;
const arrayType = (column: keyof typeof USAGE_SCHEMA.usage_events): string => {
  const { kind } = USAGE_SCHEMA.usage_events[column];
  if (kind !== 'integer' && kind !== 'real' && kind !== 'text') throw new Error(`usage_events.${column}: no array type for kind ${kind}`);
  return ARRAY_TYPES[kind];
};

const POSTGRES_INSERT = {
  name: 'switchboard-usage-insert',
  text: `INSERT INTO usage_events (${COLUMN_LIST}) SELECT * FROM unnest(${Object.values(LEDGER_COLUMNS)
    .map((column, i) => `$${i + 1}::${arrayType(column)}`)
    .join(', ')})`,
};

/** One rollup row's key and what a batch adds to it (usage_spend_hourly; migration 014 says how it counts). */
interface HourSpend {
  readonly projectId: string;
  readonly endpointId: string;
  readonly workspaceId: string;
  readonly hourStart: number;
  tokens: number;
  nanos: number;
}

/**
 * A batch's rows added up per project, endpoint, workspace ('' for none) and hour, counted as the budgets
 * count them (what migration 014's per-row trigger added): tokens billed and nano-dollars (0 unpriced).
 */
function spendByHour(rows: readonly LedgerRow[]): HourSpend[] {
  const sums = new Map<string, HourSpend>();
  for (const r of rows) {
    const workspaceId = r.workspaceId ?? '';
    const hourStart = Math.floor(r.createdAt / HOUR_MS) * HOUR_MS;
    const key = `${r.projectId}\u0000${r.endpointId}\u0000${workspaceId}\u0000${hourStart}`;
    let sum = sums.get(key);
    if (!sum) sums.set(key, (sum = { projectId: r.projectId, endpointId: r.endpointId, workspaceId, hourStart, tokens: 0, nanos: 0 }));
    sum.tokens += countedTokens(r);
    sum.nanos += r.costNanos ?? 0;
  }
  return [...sums.values()];
}

const SQLITE_ROLLUP = `INSERT INTO usage_spend_hourly (project_id, endpoint_id, workspace_id, hour_start, tokens, nanos) VALUES (?, ?, ?, ?, ?, ?)
  ON CONFLICT (project_id, endpoint_id, workspace_id, hour_start) DO UPDATE SET tokens = tokens + excluded.tokens, nanos = nanos + excluded.nanos`;

const sqliteInserter = perConnection((db) => {
  const rollup = db.prepare(SQLITE_ROLLUP);
  const one = db.prepare(sqliteInsertText(1));
  const many = db.prepare(sqliteInsertText(ROWS_PER_STATEMENT));
  // Argument arrays reused for every statement: binding row by row allocated an array per row.
  const manyArgs = new Array<unknown>(ROWS_PER_STATEMENT * USAGE_COLUMNS.length);
  const oneArgs = new Array<unknown>(USAGE_COLUMNS.length);
  const bind = (row: LedgerRow, args: unknown[], at: number): void => {
    USAGE_COLUMNS.forEach((field, c) => {
      // A row replayed from an older journal segment may lack the newer columns: NULL, not undefined.
      args[at + c] = row[field] ?? null;
    });
  };
  const runRows = (stmt: Statement, args: unknown[], rows: readonly LedgerRow[], from: number, count: number): void => {
    for (let r = 0; r < count; r += 1) bind(rows[from + r] as LedgerRow, args, r * USAGE_COLUMNS.length);
    stmt.run(args);
  };
  return (rows: readonly LedgerRow[]): void => {
    let next = 0;
    for (; next + ROWS_PER_STATEMENT <= rows.length; next += ROWS_PER_STATEMENT) runRows(many, manyArgs, rows, next, ROWS_PER_STATEMENT);
    for (; next < rows.length; next += 1) runRows(one, oneArgs, rows, next, 1);
    // The hourly rollup, in the same transaction: one upsert per hour and target, not one per row (migration 019).
    for (const h of spendByHour(rows)) rollup.run(h.projectId, h.endpointId, h.workspaceId, h.hourStart, h.tokens, h.nanos);
  };
});

/** The rows, in the program's transaction. */
export function* insertRows(rows: readonly LedgerRow[]): SqlProgram<void> {
  if (rows.length === 0) return;
  yield* native({
    sqlite: (db) => sqliteInserter(db)(rows),
    postgres: async (client) => {
      await client.query({ ...POSTGRES_INSERT, values: USAGE_COLUMNS.map((field) => rows.map((r) => r[field] ?? null)) });
    },
  });
}

const markSegment = fixedStatement('usage-mark-segment', 'INSERT INTO usage_journal_segments (segment) VALUES (?) ON CONFLICT (segment) DO NOTHING');
const forgetSegment = fixedStatement('usage-forget-segment', 'DELETE FROM usage_journal_segments WHERE segment = ?');

/**
 * A journal segment's rows go in with its marker: the marker row makes the insert happen once however many
 * writers and replays meet the segment. Returns the rows inserted (0: stored before).
 */
export function* storeSegment(segment: string, rows: readonly LedgerRow[]): SqlProgram<number> {
  const marked = yield* markSegment(segment);
  if (marked.changes === 0) return 0;
  yield* insertRows(rows);
  return rows.length;
}

/** Markers are needed only while their segment file exists; once it is unlinked they can go. */
export function* forgetSegments(segments: readonly string[]): SqlProgram<void> {
  for (const segment of segments) yield* forgetSegment(segment);
}

/**
 * One batch of the writer thread: the markers of `forget` dropped, then the rows stored, with the
 * segment's marker when there is one (null: the rows of no segment, the journal being off).
 */
export function* storeBatch(rows: readonly LedgerRow[], segment: string | null, forget: readonly string[]): SqlProgram<number> {
  yield* forgetSegments(forget);
  if (segment !== null) return yield* storeSegment(segment, rows);
  yield* insertRows(rows);
  return rows.length;
}
