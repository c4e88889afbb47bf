/**
 * Limits and coordination: the limiters and the bus (in this thread, shared by the worker threads, or in
 * Redis: coordination.ts), this instance in the store's registry, the usage store and the budget caps
 * rebuilt from it, and, with PostgreSQL, the replicas' shared registry.
 */
import type { Clock } from '../clock.js';
import type { Config } from '../config.js';
import { createCoordination, type Coordination, type SharedCoordination } from '../coordination/coordination.js';
import type { AdmissionPort } from '../core/coordination/admission-port.js';
import type { RecoveryCue } from '../core/coordination/recovery-cue.js';
import { Budgets } from '../core/limits/budgets.js';
import type { UsageStore } from '../core/store/usage-store.js';
import type { Logger } from '../log.js';
import { createBudgetsRepo, raiseBudgetSpendFrom, restoreBudgetsFrom, type BudgetsRepo, type StoredBudget } from '../store/budgets-repo.js';
import { createInstanceRegistry, type InstanceRegistry } from '../store/instances-registry.js';
import type { PgInstanceRegistry } from '../store/postgres/instances-registry.js';
import type { PgStore } from '../store/postgres/pg-store.js';
import { BUDGETS_TOPIC, createPgUsageStore } from '../store/postgres/usage-store.js';
import { createSqliteUsageStore } from '../store/sqlite/usage-store.js';
import { replayUsageJournal, replayUsageJournalInto } from '../store/usage-journal.js';
import { createUsageReader } from '../store/usage-reader.js';
import type { StoreParts } from './store.js';

export interface LimitsParts {
  readonly coordination: Coordination;
  readonly limits: AdmissionPort;
  readonly instances: InstanceRegistry;
  readonly usageStore: UsageStore;
  readonly budgets: Budgets;
  /** What the bus reads when a sibling changed caps, synchronously: SQLite's table, or the caps PostgreSQL last sent. */
  readonly storedCaps: () => readonly StoredBudget[];
  /** Budget spend raised to the shared ledger's: on the bus's resubscribe, and every few seconds where replicas share it. */
  readonly budgetSpend: LedgerSpendSync;
}

export async function wireLimits(config: Config, storage: StoreParts, clock: Clock, logger: Logger, workerThreads: SharedCoordination | undefined): Promise<LimitsParts> {
  const coordination = await createCoordination(config, logger, workerThreads);
  logger.info({ coordination: coordination.mode }, 'limits and bus coordination chosen');
  const { db, dbPath, backend } = storage;
  // This instance in the store's registry (issue 12): recovery, now and as siblings die, takes only the
  // work of instances that are gone, never a live sibling's.
  const instances = createInstanceRegistry({ dbPath, db, onError: (message) => logger.error({ message }, 'instance registry failed'), onWarn: (message, fields) => logger.warn(fields, message) });
  logger.info({ instance: instances.id, lease_ms: instances.leaseMs }, 'registered as a gateway instance of the store');
  // The usage ledger and the budget caps (issue 12): in PostgreSQL, shared by the replicas, or in this
  // instance's SQLite file, whose totals are read on a thread of their own (store/usage-reader.ts).
  const usageStore = backend.pg ? createPgUsageStore(backend.pg) : createSqliteUsageStore(db, { totals: createUsageReader(dbPath) });
  if (storage.store.durable) await replayJournalOnSweeps(storage, usageStore, instances, logger);
  const budgets = new Budgets();
  const restored = await restoreBudgetsFrom(usageStore, config, budgets, clock.now());
  const storedCaps = backend.pg ? followStoredCaps(backend.pg, usageStore, budgets, restored, logger) : sqliteCaps(createBudgetsRepo(db));
  // Replicas share the ledger (PostgreSQL, or one SQLite file with Redis carrying the bus): a charge the bus
  // lost is healed from the ledger within one period, whatever happened to the bus.
  const shared = backend.pg !== null || coordination.mode === 'redis';
  const budgetSpend = followLedgerSpend(usageStore, budgets, clock, logger, shared ? budgetResyncMs() : null);
  return { coordination, limits: coordination.admission, instances, usageStore, budgets, storedCaps, budgetSpend };
}

/** How often replicas sharing a ledger raise budget spend to it (docs/decisions.md "Budget spend follows the ledger"). */
export const BUDGET_RESYNC_MS = 5_000;
const MIN_BUDGET_RESYNC_MS = 100;

/** Tests shorten or lengthen the period through SWITCHBOARD_BUDGET_RESYNC_MS (at least 100 ms); operators have no reason to. */
export function budgetResyncMs(env: NodeJS.ProcessEnv = process.env): number {
  const raw = env.SWITCHBOARD_BUDGET_RESYNC_MS;
  const ms = raw === undefined ? NaN : Number(raw);
  return Number.isInteger(ms) && ms >= MIN_BUDGET_RESYNC_MS ? ms : BUDGET_RESYNC_MS;
}

export interface LedgerSpendSync {
  /** Reads the ledger's spend and raises the budgets to it; a call during a read runs one more read after it. */
  resync(): void;
  /** Stops the period (before the usage store closes). */
  close(): void;
}

function followLedgerSpend(usageStore: UsageStore, budgets: Budgets, clock: Clock, logger: Logger, everyMs: number | null): LedgerSpendSync {
  let running = false;
  let again = false;
  let failing = false;
  let closed = false;
  const resync = (): void => {
    if (closed) return;
    if (running) {
      // The read under way may have started before what prompted this call: read once more after it.
      again = true;
      return;
    }
    running = true;
    raiseBudgetSpendFrom(usageStore, budgets, clock.now())
      .then(
        () => {
          if (failing) logger.info('budgets: spend read from the ledger again');
          failing = false;
        },
        (err: unknown) => {
          if (!failing && !closed) logger.warn({ err }, 'budgets: reading spend from the ledger failed; tried again at the next resync');
          failing = true;
        },
      )
      .finally(() => {
        running = false;
        if (!again) return;
        again = false;
        resync();
      });
  };
  const timer = everyMs === null ? null : setInterval(resync, everyMs);
  timer?.unref();
  return {
    resync,
    close() {
      closed = true;
      if (timer) clearInterval(timer);
    },
  };
}

/** Turns a killed instance had answered but not yet stored go in before the budgets are rebuilt from them, and at every sweep. */
async function replayJournalOnSweeps({ backend, db, dbPath }: StoreParts, usageStore: UsageStore, instances: InstanceRegistry, logger: Logger): Promise<void> {
  const replayJournal = async (): Promise<void> => {
    const replayed = backend.pg ? await replayUsageJournalInto(usageStore, dbPath, instances) : replayUsageJournal(db, dbPath, instances);
    if (replayed.segments > 0) logger.warn(replayed, 'usage journal: rows of a stopped process replayed into the ledger');
  };
  await replayJournal();
  instances.onSweep(() => void replayJournal().catch((err: unknown) => logger.error({ err }, 'usage journal replay failed; the next sweep tries again')));
}

/** Caps another replica stored: reloaded on its notice (the last reload started wins). Returns the caps last read. */
function followStoredCaps(pg: PgStore, usageStore: UsageStore, budgets: Budgets, restored: StoredBudget[], logger: Logger): () => readonly StoredBudget[] {
  let stored = restored;
  let reloads = 0;
  pg.onChange(BUDGETS_TOPIC, () => {
    const reload = ++reloads;
    usageStore.listBudgets().then(
      (list) => {
        if (reload !== reloads) return;
        stored = list;
        budgets.replaceApiCaps(list);
      },
      (err: unknown) => logger.error({ err }, 'budgets: reloading the stored caps failed'),
    );
  });
  return () => stored;
}

/** SQLite's caps table, read when a sibling on the same file changed caps. */
function sqliteCaps(repo: BudgetsRepo): () => readonly StoredBudget[] {
  return () => repo.list();
}

/** With PostgreSQL: the shared database and this replica's row in its registry of replicas. */
export interface SharedReplicas {
  readonly pg: PgStore;
  readonly instances: PgInstanceRegistry;
}

/**
 * The shared aggregates own their running work under this replica's row (PostgreSQL's registry, or the
 * SQLite file's), whose beats cue the recovery of a gone sibling's. While Redis is down each replica admits
 * at most its share of every limit: the replicas are counted in the registry they all beat in (PostgreSQL's
 * across hosts, the shared SQLite file's on one host).
 */
export function shareReplicas(pg: PgStore | null, pgInstances: PgInstanceRegistry | null, { coordination, instances }: LimitsParts): { shared: SharedReplicas | null; recoveryCue: RecoveryCue } {
  const shared = pg && pgInstances ? { pg, instances: pgInstances } : null;
  coordination.countReplicasWith?.(shared ? () => shared.instances.liveInstances() : () => instances.liveInstances());
  return { shared, recoveryCue: shared?.instances ?? instances };
}
