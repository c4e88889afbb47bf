/**
 * Dashboard sessions and OpenID Connect sign-ins in flight (migration 015). Both are keyed by the SHA-256
 * of a random id that only the browser's cookie holds (dashboard/auth/sessions.ts).
 */
import type { OidcFlowRecord, SessionRecord } from '../core/store/identity-store.js';
import { writeTransaction, type Db } from './db.js';
import { toFlow, toSession, type FlowRow, type SessionRow } from './identity-rows.js';

export type { OidcFlowRecord, SessionRecord };

export function createDashboardSessionsRepo(db: Db) {
  const insert = db.prepare(`
    INSERT INTO dashboard_sessions (id_hash, user_id, stage, created_at, last_seen_at, ip, user_agent, next_path)
    VALUES (@idHash, @userId, @stage, @createdAt, @lastSeenAt, @ip, @userAgent, @nextPath)`);
  const find = db.prepare<[string], SessionRow>('SELECT * FROM dashboard_sessions WHERE id_hash = ?');
  const touch = db.prepare('UPDATE dashboard_sessions SET last_seen_at = @now WHERE id_hash = @idHash AND last_seen_at < @now');
  const remove = db.prepare('DELETE FROM dashboard_sessions WHERE id_hash = ?');
  const removeOfUser = db.prepare('DELETE FROM dashboard_sessions WHERE user_id = @userId AND id_hash = @idHash');
  const removeAllOfUser = db.prepare('DELETE FROM dashboard_sessions WHERE user_id = ?');
  const listOfUser = db.prepare<[string], SessionRow>("SELECT * FROM dashboard_sessions WHERE user_id = ? AND stage = 'full' ORDER BY created_at DESC");
  const removeStale = db.prepare('DELETE FROM dashboard_sessions WHERE last_seen_at < @idleBefore OR created_at < @createdBefore');
  const insertFlow = db.prepare(`
    INSERT INTO dashboard_oidc_flows (id_hash, provider_id, state, nonce, code_verifier, connect_user_id, next_path, created_at)
    VALUES (@idHash, @providerId, @state, @nonce, @codeVerifier, @connectUserId, @nextPath, @createdAt)`);
  const findFlow = db.prepare<[string], FlowRow>('SELECT * FROM dashboard_oidc_flows WHERE id_hash = ?');
  const removeFlow = db.prepare('DELETE FROM dashboard_oidc_flows WHERE id_hash = ?');
  const removeStaleFlows = db.prepare('DELETE FROM dashboard_oidc_flows WHERE created_at < ?');

  return {
    insert(s: SessionRecord): void {
      insert.run(s);
    },
    find: (idHash: string): SessionRecord | null => {
      const r = find.get(idHash);
      return r ? toSession(r) : null;
    },
    touch(idHash: string, now: number): void {
      touch.run({ idHash, now });
    },
    remove(idHash: string): void {
      remove.run(idHash);
    },
    /** Replaces one session by another in one transaction (a new id at sign-in and at privilege change). */
    replace: writeTransaction(db, (oldHash: string | null, next: SessionRecord): void => {
      if (oldHash !== null) remove.run(oldHash);
      insert.run(next);
    }),
    removeOfUser: (userId: string, idHash: string): boolean => removeOfUser.run({ userId, idHash }).changes > 0,
    removeAllOfUser(userId: string): void {
      removeAllOfUser.run(userId);
    },
    listOfUser: (userId: string): SessionRecord[] => listOfUser.all(userId).map(toSession),
    removeStale(idleBefore: number, createdBefore: number, flowsBefore: number): void {
      writeTransaction(db, () => {
        removeStale.run({ idleBefore, createdBefore });
        removeStaleFlows.run(flowsBefore);
      })();
    },
    insertFlow(f: OidcFlowRecord): void {
      insertFlow.run(f);
    },
    /** A flow is used at most once: read and deleted together. */
    takeFlow: writeTransaction(db, (idHash: string): OidcFlowRecord | null => {
      const r = findFlow.get(idHash);
      if (!r) return null;
      removeFlow.run(idHash);
      return toFlow(r);
    }),
  };
}

export type DashboardSessionsRepo = ReturnType<typeof createDashboardSessionsRepo>;
