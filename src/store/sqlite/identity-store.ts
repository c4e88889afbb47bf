/**
 * The identity port over this instance's SQLite file (the embedded default): the synchronous repos
 * (store/users-repo.ts, store/dashboard-sessions-repo.ts) behind the asynchronous port, so the dashboard
 * code is the same whichever store serves it.
 */
import type { IdentityStore } from '../../core/store/identity-store.js';
import { createDashboardSessionsRepo } from '../dashboard-sessions-repo.js';
import type { Db } from '../db.js';
import { createUsersRepo } from '../users-repo.js';

export function createSqliteIdentityStore(db: Db): IdentityStore {
  const users = createUsersRepo(db);
  const sessions = createDashboardSessionsRepo(db);
  return {
    users: {
      create: async (u, roles) => users.create(u, roles),
      setRole: async (userId, role) => users.setRole(userId, role),
      removeRole: async (userId, projectId, now) => users.removeRole(userId, projectId, now),
      byId: async (id) => users.byId(id),
      byEmail: async (email) => users.byEmail(email),
      list: async () => users.list(),
      roles: async (userId) => users.roles(userId),
      delete: async (userId, now) => users.delete(userId, now),
      setPassword: async (userId, hash, now) => users.setPassword(userId, hash, now),
      setTotp: async (userId, sealed, now) => users.setTotp(userId, sealed, now),
      claimTotpStep: async (userId, step) => users.claimTotpStep(userId, step),
      replaceBackupCodes: async (userId, hashes) => users.replaceBackupCodes(userId, hashes),
      useBackupCode: async (userId, hash, now) => users.useBackupCode(userId, hash, now),
      unusedBackupCodes: async (userId) => users.unusedBackupCodes(userId),
      linkIdentity: async (i) => users.linkIdentity(i),
      identity: async (providerId, subject) => users.identity(providerId, subject),
      identitiesOf: async (userId) => users.identitiesOf(userId),
      unlinkIdentity: async (userId, providerId) => users.unlinkIdentity(userId, providerId),
      newestSealedTotp: async () => users.newestSealedTotp(),
    },
    sessions: {
      find: async (idHash) => sessions.find(idHash),
      // Three local reads of a file in the page cache: one query would save nothing here.
      async view(idHash) {
        const session = sessions.find(idHash);
        const user = session ? users.byId(session.userId) : null;
        return session && user ? { session, user, roles: users.roles(user.id) } : null;
      },
      touch: async (idHash, now) => sessions.touch(idHash, now),
      remove: async (idHash) => sessions.remove(idHash),
      replace: async (oldHash, next) => sessions.replace(oldHash, next),
      removeOfUser: async (userId, idHash) => sessions.removeOfUser(userId, idHash),
      removeAllOfUser: async (userId) => sessions.removeAllOfUser(userId),
      listOfUser: async (userId) => sessions.listOfUser(userId),
      removeStale: async (idleBefore, createdBefore, flowsBefore) => sessions.removeStale(idleBefore, createdBefore, flowsBefore),
      insertFlow: async (f) => sessions.insertFlow(f),
      takeFlow: async (idHash) => sessions.takeFlow(idHash),
    },
  };
}
