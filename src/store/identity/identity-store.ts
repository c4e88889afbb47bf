/**
 * The identity port (core/store/identity-store.ts), written once for SQLite and PostgreSQL (issue 33): each
 * method is a program (store/sql/sql-program.ts) its backend's runner drives. On PostgreSQL the tables are
 * shared by every replica: a user created on one signs in on another, a session cookie issued by one is
 * honoured by all. Nothing here is cached: the dashboard reads its session per page (one indexed query,
 * `sessions.view`), and the API request path never reads these tables.
 *
 * What the dialects do differently is small: the e-mail lookup goes through each backend's unique index
 * (emailIs), the session view folds the roles in with each one's JSON aggregate (sql/json-rows.ts), and a
 * change to what a user's API keys reach is announced to PostgreSQL's replicas (sql/change-notice.ts).
 */
import { sql, type Expression, type Kysely, type SqlBool } from 'kysely';
import type { IdentityStore, SessionRecord, SessionsStore, UserRole, UsersStore } from '../../core/store/identity-store.js';
import { toJson } from '../json-column.js';
import { changeNotice } from '../sql/change-notices.js';
import { jsonRowsFrom, parsedJsonRows } from '../sql/json-rows.js';
import { LIMIT_ONE, sqlFor } from '../sql/sql-builder.js';
import { first, prepared, rows, run, type SqlDialect, type SqlProgram } from '../sql/sql-program.js';
import type { SqlRunner } from '../sql/sql-runner.js';
import { toFlow, toIdentity, toRole, toSession, toUser, type RoleRow } from './identity-rows.js';
import type { IdentityTables } from './identity-tables.js';

/** The catalog's topic (postgres/migrations/001-catalog): every replica reloads its credentials on it. */
const CATALOG_TOPIC = 'catalog';

type Db = Kysely<IdentityTables>;

/**
 * E-mail equality whatever the case, through the unique index each backend has: SQLite's column is
 * COLLATE NOCASE (a plain comparison folds case and uses it), PostgreSQL's index is on lower(email).
 */
const emailIs = (dialect: SqlDialect, email: string): Expression<SqlBool> =>
  dialect === 'postgres' ? sql<SqlBool>`lower(email) = lower(${email})` : sql<SqlBool>`email = ${email}`;

export function createIdentityStore(runner: SqlRunner): IdentityStore {
  const { db, dialect } = sqlFor<IdentityTables>(runner.dialect);
  return { users: usersStore(runner, db, dialect), sessions: sessionsStore(runner, db, dialect) };
}

const upsertRole = (db: Db, userId: string, r: UserRole) =>
  db
    .insertInto('dashboard_user_roles')
    .values({ user_id: userId, project_id: r.projectId, role: r.role, workspace_ids: r.workspaceIds ? toJson(r.workspaceIds) : null })
    .onConflict((oc) => oc.columns(['user_id', 'project_id']).doUpdateSet((eb) => ({ role: eb.ref('excluded.role'), workspace_ids: eb.ref('excluded.workspace_ids') })));

/** The user's active keys (the catalog's table); the caller narrows and runs it in its transaction. */
const revokeKeysOf = (db: Db, userId: string, now: number, reason: 'user_deleted' | 'member_removed') =>
  db.updateTable('api_keys').set({ revoked_at: now, revoked_reason: reason }).where('user_id', '=', userId).where('revoked_at', 'is', null);

const changed = (count: number): boolean => count > 0;

function usersStore(runner: SqlRunner, db: Db, dialect: SqlDialect): UsersStore {
  const allUsers = db.selectFrom('dashboard_users').selectAll();
  const oneUser = (where: Expression<SqlBool>) => runner.read(first(allUsers.where(where))).then((r) => (r ? toUser(r) : null));
  const deleteCodesOf = (userId: string) => db.deleteFrom('dashboard_backup_codes').where('user_id', '=', userId);

  function* create(...[u, roles]: Parameters<UsersStore['create']>): SqlProgram<void> {
    yield* run(db.insertInto('dashboard_users').values({ id: u.id, email: u.email, name: u.name, password_hash: u.passwordHash, created_at: u.now, updated_at: u.now }));
    for (const r of roles) yield* run(upsertRole(db, u.id, r));
  }

  // A role decides what the user's own API keys reach (store/catalog/catalog-rows.ts toCredential): every replica reloads them.
  function* setRole(userId: string, role: UserRole): SqlProgram<void> {
    yield* run(upsertRole(db, userId, role));
    yield* changeNotice(CATALOG_TOPIC);
  }

  function* removeRole(userId: string, projectId: string, now: number): SqlProgram<{ removed: boolean; keysRevoked: number }> {
    const removed = changed(yield* run(db.deleteFrom('dashboard_user_roles').where('user_id', '=', userId).where('project_id', '=', projectId)));
    if (!removed) return { removed, keysRevoked: 0 };
    const keysRevoked = yield* run(revokeKeysOf(db, userId, now, 'member_removed').where('project_id', '=', projectId));
    yield* changeNotice(CATALOG_TOPIC);
    return { removed, keysRevoked };
  }

  // The revocation commits with the deletion or not at all (SPEC "API key": owning user deleted -> 401 key_inactive).
  function* deleteUser(userId: string, now: number): SqlProgram<{ deleted: boolean; keysRevoked: number }> {
    const keysRevoked = yield* run(revokeKeysOf(db, userId, now, 'user_deleted'));
    const deleted = changed(yield* run(db.deleteFrom('dashboard_users').where('id', '=', userId)));
    if (keysRevoked > 0 || deleted) yield* changeNotice(CATALOG_TOPIC);
    return { deleted, keysRevoked };
  }

  function* setPassword(userId: string, hash: string, now: number): SqlProgram<void> {
    yield* run(db.updateTable('dashboard_users').set({ password_hash: hash, updated_at: now }).where('id', '=', userId));
    yield* run(db.deleteFrom('dashboard_sessions').where('user_id', '=', userId));
  }

  return {
    create: (u, roles) => runner.write(create(u, roles)),
    setRole: (userId, role) => runner.write(setRole(userId, role)),
    removeRole: (userId, projectId, now) => runner.write(removeRole(userId, projectId, now)),
    byId: (id) => oneUser(sql<SqlBool>`id = ${id}`),
    byEmail: (email) => oneUser(emailIs(dialect, email)),
    list: () => runner.read(rows(allUsers.orderBy('created_at').orderBy('id'))).then((found) => found.map(toUser)),
    roles: (userId) =>
      runner
        .read(rows(db.selectFrom('dashboard_user_roles').select(['project_id', 'role', 'workspace_ids']).where('user_id', '=', userId).orderBy('project_id')))
        .then((found) => found.map(toRole)),
    delete: (userId, now) => runner.write(deleteUser(userId, now)),
    setPassword: (userId, hash, now) => runner.write(setPassword(userId, hash, now)),
    ...secondFactors(runner, db, deleteCodesOf),
  };
}

type SecondFactors = Pick<
  UsersStore,
  'setTotp' | 'claimTotpStep' | 'replaceBackupCodes' | 'useBackupCode' | 'unusedBackupCodes' | 'linkIdentity' | 'identity' | 'identitiesOf' | 'unlinkIdentity' | 'newestSealedTotp'
>;

/** TOTP, backup codes and linked sign-in identities: the users' second factors. */
function secondFactors(runner: SqlRunner, db: Db, deleteCodesOf: (userId: string) => ReturnType<Db['deleteFrom']>): SecondFactors {
  function* setTotp(userId: string, sealed: string | null, now: number): SqlProgram<void> {
    yield* run(db.updateTable('dashboard_users').set({ totp_secret_sealed: sealed, totp_last_step: null, updated_at: now }).where('id', '=', userId));
    if (sealed === null) yield* run(deleteCodesOf(userId));
  }

  function* replaceBackupCodes(userId: string, hashes: readonly string[]): SqlProgram<void> {
    yield* run(deleteCodesOf(userId));
    if (hashes.length === 0) return;
    const values = hashes.map((h) => ({ user_id: userId, code_hash: h, used_at: null }));
    yield* run(db.insertInto('dashboard_backup_codes').values(values).onConflict((oc) => oc.doNothing()));
  }

  return {
    setTotp: (userId, sealed, now) => runner.write(setTotp(userId, sealed, now)),
    // The compare-and-set that makes a TOTP code single-use (RFC 6238 section 5.2), across processes and
    // replicas: one UPDATE, row-locked.
    claimTotpStep: (userId, step) =>
      runner
        .read(run(db.updateTable('dashboard_users').set({ totp_last_step: step }).where('id', '=', userId).where((eb) => eb.or([eb('totp_last_step', 'is', null), eb('totp_last_step', '<', step)]))))
        .then(changed),
    replaceBackupCodes: (userId, hashes) => runner.write(replaceBackupCodes(userId, hashes)),
    useBackupCode: (userId, hash, now) =>
      runner
        .read(run(db.updateTable('dashboard_backup_codes').set({ used_at: now }).where('user_id', '=', userId).where('code_hash', '=', hash).where('used_at', 'is', null)))
        .then(changed),
    unusedBackupCodes: (userId) =>
      runner
        .read(first(db.selectFrom('dashboard_backup_codes').select(sql<number>`count(*)`.as('n')).where('user_id', '=', userId).where('used_at', 'is', null)))
        .then((r) => r?.n ?? 0),
    async linkIdentity(i) {
      await runner.read(run(db.insertInto('dashboard_identities').values({ provider_id: i.providerId, subject: i.subject, user_id: i.userId, email: i.email, created_at: i.now })));
    },
    identity: (providerId, subject) =>
      runner
        .read(first(db.selectFrom('dashboard_identities').selectAll().where('provider_id', '=', providerId).where('subject', '=', subject)))
        .then((r) => (r ? toIdentity(r) : null)),
    identitiesOf: (userId) =>
      runner.read(rows(db.selectFrom('dashboard_identities').selectAll().where('user_id', '=', userId).orderBy('provider_id'))).then((found) => found.map(toIdentity)),
    unlinkIdentity: (userId, providerId) =>
      runner.read(run(db.deleteFrom('dashboard_identities').where('user_id', '=', userId).where('provider_id', '=', providerId))).then(changed),
    newestSealedTotp: () =>
      runner
        .read(
          first(
            db
              .selectFrom('dashboard_users')
              .select(['totp_secret_sealed as sealed', 'id as associated'])
              .where('totp_secret_sealed', 'is not', null)
              .orderBy('updated_at', 'desc')
              .orderBy('id')
              .limit(LIMIT_ONE),
          ),
        )
        .then((r) => (r?.sealed ? { sealed: r.sealed, associated: r.associated } : null)),
  };
}

function sessionsStore(runner: SqlRunner, db: Db, dialect: SqlDialect): SessionsStore {
  const bySession = (idHash: string) => db.deleteFrom('dashboard_sessions').where('id_hash', '=', idHash);
  const insertSession = (s: SessionRecord) =>
    db.insertInto('dashboard_sessions').values({
      id_hash: s.idHash,
      user_id: s.userId,
      stage: s.stage,
      created_at: s.createdAt,
      last_seen_at: s.lastSeenAt,
      ip: s.ip,
      user_agent: s.userAgent,
      next_path: s.nextPath,
    });
  // Every dashboard page asks this: one statement, by primary key, the roles folded in as JSON; compiled once.
  const view = prepared((idHash: string) =>
      db
        .selectFrom('dashboard_sessions as s')
        .innerJoin('dashboard_users as u', 'u.id', 's.user_id')
        .selectAll('s')
        .select(['u.email', 'u.name', 'u.password_hash', 'u.totp_secret_sealed', 'u.totp_last_step', 'u.created_at as user_created_at', 'u.updated_at as user_updated_at'])
        .select((eb) =>
          jsonRowsFrom(dialect, eb.selectFrom('dashboard_user_roles as r').select(['r.project_id', 'r.role', 'r.workspace_ids']).whereRef('r.user_id', '=', 'u.id')).as('roles'),
        )
        .where('s.id_hash', '=', idHash),
  );

  function* replace(oldHash: string | null, next: SessionRecord): SqlProgram<void> {
    if (oldHash !== null) yield* run(bySession(oldHash));
    yield* run(insertSession(next));
  }

  function* removeStale(idleBefore: number, createdBefore: number, flowsBefore: number): SqlProgram<void> {
    yield* run(db.deleteFrom('dashboard_sessions').where((eb) => eb.or([eb('last_seen_at', '<', idleBefore), eb('created_at', '<', createdBefore)])));
    yield* run(db.deleteFrom('dashboard_oidc_flows').where('created_at', '<', flowsBefore));
  }

  return {
    find: (idHash) => runner.read(first(db.selectFrom('dashboard_sessions').selectAll().where('id_hash', '=', idHash))).then((r) => (r ? toSession(r) : null)),
    async view(idHash) {
      const row = await runner.read(first(view(idHash)));
      if (!row) return null;
      const user = toUser({ ...row, id: row.user_id, created_at: row.user_created_at, updated_at: row.user_updated_at });
      // By project, as `users.roles` lists them (an aggregate's order is not the subquery's by any promise).
      const roles = parsedJsonRows<RoleRow>(row.roles).sort((a, b) => (a.project_id < b.project_id ? -1 : a.project_id > b.project_id ? 1 : 0));
      return { session: toSession(row), user, roles: roles.map(toRole) };
    },
    async touch(idHash, now) {
      await runner.read(run(db.updateTable('dashboard_sessions').set({ last_seen_at: now }).where('id_hash', '=', idHash).where('last_seen_at', '<', now)));
    },
    async remove(idHash) {
      await runner.read(run(bySession(idHash)));
    },
    replace: (oldHash, next) => runner.write(replace(oldHash, next)),
    removeOfUser: (userId, idHash) => runner.read(run(bySession(idHash).where('user_id', '=', userId))).then(changed),
    async removeAllOfUser(userId) {
      await runner.read(run(db.deleteFrom('dashboard_sessions').where('user_id', '=', userId)));
    },
    listOfUser: (userId) =>
      runner
        .read(rows(db.selectFrom('dashboard_sessions').selectAll().where('user_id', '=', userId).where('stage', '=', 'full').orderBy('created_at', 'desc')))
        .then((found) => found.map(toSession)),
    removeStale: (idleBefore, createdBefore, flowsBefore) => runner.write(removeStale(idleBefore, createdBefore, flowsBefore)),
    async insertFlow(f) {
      await runner.read(
        run(
          db.insertInto('dashboard_oidc_flows').values({
            id_hash: f.idHash,
            provider_id: f.providerId,
            state: f.state,
            nonce: f.nonce,
            code_verifier: f.codeVerifier,
            connect_user_id: f.connectUserId,
            next_path: f.nextPath,
            created_at: f.createdAt,
          }),
        ),
      );
    },
    // One statement: of two callers (or replicas) racing on the same callback, exactly one gets the row.
    takeFlow: (idHash) => runner.read(first(db.deleteFrom('dashboard_oidc_flows').where('id_hash', '=', idHash).returningAll())).then((r) => (r ? toFlow(r) : null)),
  };
}
