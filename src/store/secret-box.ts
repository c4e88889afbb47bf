/**
 * Values the gateway must read back (webhook signing secrets, routing decision excerpts) are stored
 * encrypted: AES-256-GCM with a key kept outside the database, the row id as associated data (a ciphertext
 * copied onto another row does not open). A dump or a copy of the SQLite file alone reveals no secret.
 *
 * The key: SWITCHBOARD_SECRET_KEY (base64 of 32 bytes) when set, else the file `<db path>.key`, created
 * on first use with mode 0600; a `:memory:` store uses a key that lives as long as the process. Keep the
 * key file with the database's backups, or better, in the environment.
 *
 * A key that cannot open what the store holds is refused (SecretKeyError, the gateway does not start):
 * a database restored without its key file, or next to another store's key, used to get a fresh key and
 * read every sealed value back as nothing, silently (issue 19, defect 8). The store's own sealed values
 * are the check: no separate fingerprint to migrate in, and a store with nothing sealed has nothing to
 * lose, so a new key is right for it.
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import type { Db } from './db.js';

export interface SecretBox {
  seal(plain: string, associated: string): string;
  /** Throws when the value was sealed under another key or for another row. */
  open(sealed: string, associated: string): string;
}

/** A value the store holds sealed, with the associated data it was sealed for. */
export interface SealedValue {
  readonly sealed: string;
  readonly associated: string;
}

/** The key cannot open what the store holds, or is missing or malformed: an operator must fix it. */
export class SecretKeyError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SecretKeyError';
  }
}

const VERSION = 'v1';
const KEY_BYTES = 32;

/**
 * The newest sealed value of each kind: enough to tell the right key from a wrong one. The newest,
 * because a store that already lost its key once (before this check existed) holds older values no key
 * opens; what matters is that the key opens what is being written now.
 */
export function storedSealedValues(db: Db): SealedValue[] {
  const webhook = db
    .prepare<[], SealedValue>('SELECT secret_sealed AS sealed, id AS associated FROM webhook_endpoints ORDER BY seq DESC LIMIT 1')
    .get();
  // A turn with no text has an empty excerpt, stored as is (not sealed); the scan stops at the first sealed one.
  const decision = db
    .prepare<[], SealedValue>(
      "SELECT query_preview AS sealed, request_id AS associated FROM routing_decisions WHERE query_preview <> '' ORDER BY rowid DESC LIMIT 1",
    )
    .get();
  // Dashboard users' TOTP secrets (migration 015), sealed with the user id as associated data: a store
  // whose only sealed values are these must still refuse a key that cannot open them.
  const totp = db
    .prepare<[], SealedValue>('SELECT totp_secret_sealed AS sealed, id AS associated FROM dashboard_users WHERE totp_secret_sealed IS NOT NULL ORDER BY rowid DESC LIMIT 1')
    .get();
  return [webhook, decision, totp].filter((v): v is SealedValue => v !== undefined);
}

/**
 * The store's secret box. `stored` is what the store already holds sealed (storedSealedValues): the key
 * must open at least one of them, and with any stored, a missing key file is an error, never created.
 */
export function loadSecretBox(dbPath: string, stored: readonly SealedValue[], env: NodeJS.ProcessEnv = process.env, holder: string = dbPath): SecretBox {
  return createSecretBox(loadKey(dbPath, stored, env, holder));
}

/** `holder`: where the stored values are, as error messages name it (the SQLite file, or PostgreSQL too). */
function loadKey(dbPath: string, stored: readonly SealedValue[], env: NodeJS.ProcessEnv, holder: string): Buffer {
  const fromEnv = env.SWITCHBOARD_SECRET_KEY;
  if (fromEnv) return opening(checkedKey(Buffer.from(fromEnv, 'base64'), 'SWITCHBOARD_SECRET_KEY'), 'SWITCHBOARD_SECRET_KEY', holder, stored);
  if (dbPath === ':memory:') return randomBytes(KEY_BYTES);
  const file = `${dbPath}.key`;
  if (stored.length === 0) {
    try {
      // 'wx': never overwrite; if another process created it first, read theirs.
      writeFileSync(file, `${randomBytes(KEY_BYTES).toString('base64')}\n`, { flag: 'wx', mode: 0o600 });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
  }
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    throw new SecretKeyError(
      `the key file ${file} is missing, and ${holder} holds values sealed with it (webhook secrets, routing decision excerpts): ` +
        'restore it from the backup taken with the database, or set SWITCHBOARD_SECRET_KEY to its content. ' +
        'Refusing to start with a new key, which could not open them.',
    );
  }
  return opening(checkedKey(Buffer.from(text.trim(), 'base64'), file), file, holder, stored);
}

function checkedKey(key: Buffer, source: string): Buffer {
  if (key.length !== KEY_BYTES) throw new SecretKeyError(`${source} must hold ${KEY_BYTES} bytes, base64-encoded`);
  return key;
}

/** The key, once it opens one of the stored values (or there are none). */
function opening(key: Buffer, source: string, holder: string, stored: readonly SealedValue[]): Buffer {
  if (stored.length === 0) return key;
  const box = createSecretBox(key);
  const opens = (v: SealedValue): boolean => {
    try {
      box.open(v.sealed, v.associated);
      return true;
    } catch {
      return false;
    }
  };
  if (stored.some(opens)) return key;
  throw new SecretKeyError(
    `${source} is not the key the values in ${holder} were sealed with (webhook secrets, routing decision excerpts do not open): ` +
      'use the key file backed up with this database. Refusing to start rather than lose them.',
  );
}

export function createSecretBox(key: Buffer): SecretBox {
  return {
    seal(plain, associated) {
      const iv = randomBytes(12);
      const cipher = createCipheriv('aes-256-gcm', key, iv);
      cipher.setAAD(Buffer.from(associated));
      const ct = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
      return [VERSION, iv.toString('base64url'), cipher.getAuthTag().toString('base64url'), ct.toString('base64url')].join('.');
    },
    open(sealed, associated) {
      const [version, iv, tag, ct] = sealed.split('.');
      if (version !== VERSION || !iv || !tag || ct === undefined) throw new Error('not a sealed secret');
      const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'));
      decipher.setAAD(Buffer.from(associated));
      decipher.setAuthTag(Buffer.from(tag, 'base64url'));
      return Buffer.concat([decipher.update(Buffer.from(ct, 'base64url')), decipher.final()]).toString('utf8');
    },
  };
}
