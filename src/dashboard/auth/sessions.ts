/**
 * Dashboard sessions (SPEC Authentication 14 and "Dashboard login with two-factor"): an opaque random id
 * in the cookie, its SHA-256 in the store. A signed-in ('full') session ends after 480 idle minutes
 * (activity extends it) and 1440 minutes after sign-in whatever the activity. A 'totp' session is the
 * second-factor step: it lasts 5 minutes from the password, then sign-in starts over. Every step up
 * (password -> second factor -> signed in) gets a new id, so an id planted before sign-in is worthless.
 */
import type { SessionRecord, SessionsStore, UserRecord, UserRole } from '../../core/store/identity-store.js';
import { csrfTokenOf, randomId, sha256 } from './secrets.js';

export const IDLE_MS = 480 * 60_000;
export const ABSOLUTE_MS = 1440 * 60_000;
export const SECOND_FACTOR_MS = 5 * 60_000;
/** Activity is written at most once a minute per session: a page view is not a write transaction. */
const TOUCH_EVERY_MS = 60_000;

export interface LiveSession {
  /** The raw id (from the cookie): the CSRF token is derived from it. */
  readonly id: string;
  readonly record: SessionRecord;
  readonly csrfToken: string;
}

/** A live session with its user and roles: what a dashboard page needs, from one read of the store. */
export interface SessionWithUser {
  readonly session: LiveSession;
  readonly user: UserRecord;
  readonly roles: readonly UserRole[];
}

export interface SessionStart {
  readonly userId: string;
  readonly stage: SessionRecord['stage'];
  readonly ip: string;
  readonly userAgent: string;
  readonly nextPath: string | null;
  /** The session this one replaces (the second-factor step, or the session of a privilege change). */
  readonly replacing: string | null;
}

export function createSessions(repo: SessionsStore, now: () => number) {
  const expired = (s: SessionRecord, at: number): boolean =>
    s.stage === 'totp' ? at - s.createdAt > SECOND_FACTOR_MS : at - s.lastSeenAt > IDLE_MS || at - s.createdAt > ABSOLUTE_MS;

  let lastSweep = 0;
  const sweep = async (at: number): Promise<void> => {
    if (at - lastSweep < 10 * 60_000) return;
    lastSweep = at;
    await repo.removeStale(at - IDLE_MS, at - ABSOLUTE_MS, at - SECOND_FACTOR_MS * 2);
  };

  return {
    async start(s: SessionStart): Promise<LiveSession> {
      const at = now();
      const id = randomId();
      const record: SessionRecord = {
        idHash: sha256(id),
        userId: s.userId,
        stage: s.stage,
        createdAt: at,
        lastSeenAt: at,
        ip: s.ip,
        userAgent: s.userAgent.slice(0, 300),
        nextPath: s.nextPath,
      };
      await repo.replace(s.replacing === null ? null : sha256(s.replacing), record);
      return { id, record, csrfToken: csrfTokenOf(id) };
    },

    /**
     * The session a cookie names, in the wanted stage and not expired, with its user and roles (one read);
     * an expired one is deleted. null as well when the user is gone.
     */
    async resolve(cookie: string | null, stage: SessionRecord['stage']): Promise<SessionWithUser | null> {
      if (cookie === null || cookie.length < 20 || cookie.length > 100) return null;
      const at = now();
      await sweep(at);
      const view = await repo.view(sha256(cookie));
      if (!view) return null;
      const record = view.session;
      if (expired(record, at)) {
        await repo.remove(record.idHash);
        return null;
      }
      if (record.stage !== stage) return null;
      if (stage === 'full' && at - record.lastSeenAt >= TOUCH_EVERY_MS) await repo.touch(record.idHash, at);
      return { session: { id: cookie, record, csrfToken: csrfTokenOf(cookie) }, user: view.user, roles: view.roles };
    },

    async end(id: string): Promise<void> {
      await repo.remove(sha256(id));
    },

    list: async (userId: string): Promise<SessionRecord[]> => (await repo.listOfUser(userId)).filter((s) => !expired(s, now())),
    revoke: (userId: string, idHash: string): Promise<boolean> => repo.removeOfUser(userId, idHash),
    endAllOf: (userId: string): Promise<void> => repo.removeAllOfUser(userId),
  };
}

export type Sessions = ReturnType<typeof createSessions>;
