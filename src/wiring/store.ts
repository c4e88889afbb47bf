/**
 * The store: this instance's SQLite file, PostgreSQL when `storage.kind` is postgres (the aggregates
 * replicas share, store/backend.ts), the config synced into them, and the catalog of projects and keys.
 */
import type { Config } from '../config.js';
import type { CatalogStore } from '../core/store/catalog-store.js';
import type { StoreOutbox } from '../store/webhooks/webhook-outbox.js';
import type { Logger } from '../log.js';
import { openStoreBackend, type StoreBackend } from '../store/backend.js';
import { createCatalog, createPreloadedCatalog, type Catalog, type PreloadedCatalog } from '../store/catalog.js';
import { eventLoopSibling, openDatabase, type Db } from '../store/db.js';
import { createCatalogStore } from '../store/catalog/catalog-store.js';
import { syncConfig } from '../store/catalog/sqlite-catalog.js';
import { markStoreKind } from '../store/store-kind-mark.js';
import { resolveStorePath, type StorePath } from '../store/store-path.js';
import { postgresChangeNotices, sqliteChangeNotices, type ChangeNotices } from '../store/sql/change-notices.js';
import { createPostgresRunner } from '../store/sql/postgres-runner.js';
import type { SqlRunner } from '../store/sql/sql-runner.js';
import { createSqliteRunner } from '../store/sql/sqlite-runner.js';
import { postgresTransactionEvents, sqliteTransactionEvents, type TransactionEvents } from '../store/sql/transaction-events.js';

export interface StoreParts {
  readonly store: StorePath;
  readonly dbPath: string;
  readonly db: Db;
  readonly backend: StoreBackend;
  /** Projects, endpoints and keys: shared through PostgreSQL when the store is (issue 12). */
  readonly catalogStore: CatalogStore;
  /** The catalog held in memory from PostgreSQL; null with SQLite, whose catalog reads the file. */
  readonly preloaded: PreloadedCatalog | null;
  readonly catalog: Catalog;
  /**
   * The stores written once for both backends (issue 33) that keep to the main connection (management
   * writes, durable at commit) run their programs here.
   */
  readonly mainSql: { readonly runner: SqlRunner; readonly notices: ChangeNotices };
}

export async function wireStore(config: Config, dbPathOption: string | undefined, logger: Logger): Promise<StoreParts> {
  const store = resolveStorePath(dbPathOption ?? config.storage.path);
  const dbPath = store.path;
  const db = openDatabase(dbPath, 'FULL', 'event-loop');
  const backend = await openStoreBackend(config.storage, logger);
  // So that `switchboard usage --db` on this file knows the ledger is elsewhere (store-kind-mark.ts).
  markStoreKind(db, backend.kind);
  // Into SQLite in both modes: the tables that stay in this instance's file refer to its projects.
  const synced = syncConfig(db, config, Date.now());
  logger.info({ db: dbPath, ...synced }, 'config synced into the store');
  const mainSql = backend.pg ? { runner: createPostgresRunner(backend.pg), notices: postgresChangeNotices(backend.pg) } : { runner: createSqliteRunner(db), notices: sqliteChangeNotices };
  const catalogStore = createCatalogStore(mainSql.runner);
  let preloaded: PreloadedCatalog | null = null;
  if (backend.pg) {
    logger.info({ ...(await catalogStore.syncConfig(config, Date.now())) }, 'config synced into PostgreSQL');
    const { onChange } = backend.pg;
    preloaded = await createPreloadedCatalog({ store: catalogStore, onChange, onError: (err) => logger.error({ err }, 'catalog could not be reloaded from PostgreSQL; serving the last read') });
  }
  const catalog: Catalog = preloaded ?? createCatalog(db);
  return { store, dbPath, db, backend, catalogStore, preloaded, catalog, mainSql };
}

/**
 * The webhook events of a program run on `mainSql` (the files store's): on SQLite through the outbox on
 * the main connection, on PostgreSQL fanned out to the shared tables.
 */
export function mainTransactionEvents({ backend }: StoreParts, mainOutbox: StoreOutbox): TransactionEvents {
  return backend.pg ? postgresTransactionEvents() : sqliteTransactionEvents(mainOutbox);
}

/** The connection for frequent state changes, and the outbox their events go through. */
export interface BusyStore {
  readonly busyDb: Db;
  readonly busyOutbox: StoreOutbox;
  /** The stores written once for both backends (issue 33) run their programs here, with their events. */
  readonly busySql: { readonly runner: SqlRunner; readonly events: TransactionEvents; readonly notices: ChangeNotices };
}

/**
 * Frequent state changes (invocations and agents, batch lines, responses, conversations) commit on a
 * connection of their own with synchronous=NORMAL: in WAL mode a commit still survives a process crash
 * (only a power loss can roll back the last ones), and no fsync runs on the event loop per change (the
 * exec bench measured commits of 135-254 ms under load on the FULL connection). Their events go through
 * an outbox on the same connection, so each stays in its state change's transaction.
 */
export function openBusyStore({ db, dbPath, backend }: StoreParts, outboxOn: (db: Db) => StoreOutbox): BusyStore {
  const busyDb = eventLoopSibling(db, dbPath);
  const busyOutbox = outboxOn(busyDb);
  const busySql = backend.pg
    ? { runner: createPostgresRunner(backend.pg), events: postgresTransactionEvents(), notices: postgresChangeNotices(backend.pg) }
    : { runner: createSqliteRunner(busyDb), events: sqliteTransactionEvents(busyOutbox), notices: sqliteChangeNotices };
  return { busyDb, busyOutbox, busySql };
}
