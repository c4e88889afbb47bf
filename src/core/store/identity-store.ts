/**
 * The identity port (issue 12): dashboard users, their project roles, backup codes and connected sign-in
 * providers; dashboard sessions and OpenID Connect sign-ins in flight. Secrets arrive already hashed or
 * sealed (dashboard/auth/): implementations store strings.
 *
 * Implementation: store/identity/identity-store.ts, written once for this instance's SQLite file and for
 * PostgreSQL (shared by replicas, so a session cookie issued by one is honoured by every other). Contract:
 * test/contract/identity-store-contract.ts.
 */

/** The same strings as dashboard/principal.ts ProjectRole (core does not import the dashboard). */
export type ProjectRole = 'owner' | 'admin' | 'member';

export interface UserRecord {
  readonly id: string;
  readonly email: string;
  readonly name: string;
  readonly passwordHash: string | null;
  readonly totpSealed: string | null;
  readonly totpLastStep: number | null;
  readonly createdAt: number;
  readonly updatedAt: number;
}

export interface UserRole {
  readonly projectId: string;
  readonly role: ProjectRole;
  /** null: every workspace of the project. */
  readonly workspaceIds: readonly string[] | null;
}

export interface IdentityRecord {
  readonly providerId: string;
  readonly subject: string;
  readonly userId: string;
  readonly email: string | null;
  readonly createdAt: number;
}

export interface NewUserRecord {
  readonly id: string;
  /** Already lower-cased; e-mail addresses are unique whatever their case. */
  readonly email: string;
  readonly name: string;
  readonly passwordHash: string | null;
  readonly now: number;
}

export interface SessionRecord {
  /** SHA-256 of the random id only the browser's cookie holds. */
  readonly idHash: string;
  readonly userId: string;
  /** 'totp': password accepted, second factor awaited; 'full': signed in. */
  readonly stage: 'totp' | 'full';
  readonly createdAt: number;
  readonly lastSeenAt: number;
  readonly ip: string;
  readonly userAgent: string;
  /** Where to go once signed in (a dashboard path). */
  readonly nextPath: string | null;
}

export interface OidcFlowRecord {
  readonly idHash: string;
  readonly providerId: string;
  readonly state: string;
  readonly nonce: string;
  readonly codeVerifier: string;
  /** Set when a signed-in user connects the provider from the account page. */
  readonly connectUserId: string | null;
  readonly nextPath: string | null;
  readonly createdAt: number;
}

/** A session with its user and roles: what every dashboard page needs, read in one query. */
export interface SessionView {
  readonly session: SessionRecord;
  readonly user: UserRecord;
  readonly roles: readonly UserRole[];
}

export interface UsersStore {
  /** The user and their first roles together; rejects when the e-mail (any case) is taken. */
  create(u: NewUserRecord, roles: readonly UserRole[]): Promise<void>;
  setRole(userId: string, role: UserRole): Promise<void>;
  /**
   * Takes the user out of the project: their role goes, and the API keys they own in that project are
   * revoked in the same transaction (revoked_reason `member_removed`), as deleting the user revokes them all.
   */
  removeRole(userId: string, projectId: string, now: number): Promise<{ removed: boolean; keysRevoked: number }>;
  byId(id: string): Promise<UserRecord | null>;
  /** Case-insensitive. */
  byEmail(email: string): Promise<UserRecord | null>;
  list(): Promise<UserRecord[]>;
  roles(userId: string): Promise<UserRole[]>;
  /**
   * Deletes the user (roles, codes, sessions and identities with it) and revokes the API keys they own in
   * the same transaction (SPEC "API key": owning user deleted -> 401 key_inactive).
   */
  delete(userId: string, now: number): Promise<{ deleted: boolean; keysRevoked: number }>;
  /** SPEC Authentication 14: a password change or an admin reset ends every session of the user. */
  setPassword(userId: string, hash: string, now: number): Promise<void>;
  /** Enrol (sealed secret) or disable (null); disabling also removes every backup code (SPEC Authentication 13). */
  setTotp(userId: string, sealed: string | null, now: number): Promise<void>;
  /** false when this time step (or a later one) was already used: a replayed code (RFC 6238 section 5.2). */
  claimTotpStep(userId: string, step: number): Promise<boolean>;
  /** Regenerating invalidates every previous code. */
  replaceBackupCodes(userId: string, hashes: readonly string[]): Promise<void>;
  /** Single use: false when the code is unknown or already used. */
  useBackupCode(userId: string, hash: string, now: number): Promise<boolean>;
  unusedBackupCodes(userId: string): Promise<number>;
  /** Rejects when the provider's subject is already linked. */
  linkIdentity(i: { providerId: string; subject: string; userId: string; email: string | null; now: number }): Promise<void>;
  identity(providerId: string, subject: string): Promise<IdentityRecord | null>;
  identitiesOf(userId: string): Promise<IdentityRecord[]>;
  unlinkIdentity(userId: string, providerId: string): Promise<boolean>;
  /** The newest sealed TOTP secret (associated data: the user id), to check the secret key at start. */
  newestSealedTotp(): Promise<{ sealed: string; associated: string } | null>;
}

export interface SessionsStore {
  find(idHash: string): Promise<SessionRecord | null>;
  /** The session, its user and the user's roles; null when the session or the user is gone. */
  view(idHash: string): Promise<SessionView | null>;
  /** Only moves last_seen_at forward. */
  touch(idHash: string, now: number): Promise<void>;
  remove(idHash: string): Promise<void>;
  /** Replaces one session by another in one transaction (a new id at sign-in and at privilege change). */
  replace(oldHash: string | null, next: SessionRecord): Promise<void>;
  removeOfUser(userId: string, idHash: string): Promise<boolean>;
  removeAllOfUser(userId: string): Promise<void>;
  /** The user's signed-in ('full') sessions, newest first. */
  listOfUser(userId: string): Promise<SessionRecord[]>;
  removeStale(idleBefore: number, createdBefore: number, flowsBefore: number): Promise<void>;
  insertFlow(f: OidcFlowRecord): Promise<void>;
  /** A flow is used at most once: read and deleted together, so two replicas cannot both take it. */
  takeFlow(idHash: string): Promise<OidcFlowRecord | null>;
}

export interface IdentityStore {
  readonly users: UsersStore;
  readonly sessions: SessionsStore;
}
