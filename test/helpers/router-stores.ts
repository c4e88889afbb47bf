/** The router store (store/router/router-store.ts) on each backend, wired as src/main.ts wires it. */
import type { RouterStore } from '../../src/core/store/router-store.js';
import type { Db } from '../../src/store/db.js';
import type { PgStore } from '../../src/store/postgres/pg-store.js';
import { createRouterStore } from '../../src/store/router/router-store.js';
import { postgresChangeNotices, sqliteChangeNotices } from '../../src/store/sql/change-notices.js';
import { createPostgresRunner } from '../../src/store/sql/postgres-runner.js';
import { createSqliteRunner } from '../../src/store/sql/sqlite-runner.js';

export const sqliteRouterStore = (db: Db): RouterStore =>
  createRouterStore({ runner: createSqliteRunner(db), notices: sqliteChangeNotices });

export const pgRouterStore = (pg: PgStore): RouterStore =>
  createRouterStore({ runner: createPostgresRunner(pg), notices: postgresChangeNotices(pg) });
