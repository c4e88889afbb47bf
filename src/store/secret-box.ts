/**
 * Secrets the gateway must read back (webhook signing secrets) are stored encrypted: AES-256-GCM with a
 * key kept outside the database, the row id as associated data (a ciphertext copied onto another row
 * does not open). A dump or a copy of the SQLite file alone reveals no secret.
 *
 * The key: SWITCHBOARD_SECRET_KEY (base64 of 32 bytes) when set, else the file `<db path>.key`, created
 * on first use with mode 0600; a `:memory:` store uses a key that lives as long as the process. Losing
 * the key file makes stored secrets unreadable (deliveries to those webhooks fail until they are
 * re-created); keep it with the database's backups, or better, in the environment.
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';

export interface SecretBox {
  seal(plain: string, associated: string): string;
  /** Throws when the value was sealed under another key or for another row. */
  open(sealed: string, associated: string): string;
}

const VERSION = 'v1';
const KEY_BYTES = 32;

export function loadSecretBox(dbPath: string, env: NodeJS.ProcessEnv = process.env): SecretBox {
  return createSecretBox(loadKey(dbPath, env));
}

function loadKey(dbPath: string, env: NodeJS.ProcessEnv): Buffer {
  const fromEnv = env.SWITCHBOARD_SECRET_KEY;
  if (fromEnv) return checkedKey(Buffer.from(fromEnv, 'base64'), 'SWITCHBOARD_SECRET_KEY');
  if (dbPath === ':memory:') return randomBytes(KEY_BYTES);
  const file = `${dbPath}.key`;
  try {
    // 'wx': never overwrite; if another process created it first, read theirs.
    writeFileSync(file, `${randomBytes(KEY_BYTES).toString('base64')}\n`, { flag: 'wx', mode: 0o600 });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
  return checkedKey(Buffer.from(readFileSync(file, 'utf8').trim(), 'base64'), file);
}

function checkedKey(key: Buffer, source: string): Buffer {
  if (key.length !== KEY_BYTES) throw new Error(`${source} must hold ${KEY_BYTES} bytes, base64-encoded`);
  return key;
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
