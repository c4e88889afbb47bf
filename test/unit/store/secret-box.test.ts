import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openDatabase } from '../../../src/store/db.js';
import { createSecretBox, loadSecretBox, SecretKeyError, storedSealedValues, type SealedValue } from '../../../src/store/secret-box.js';
import { tempDir } from '../../helpers/processes.js';

describe('secret box', () => {
  it('opens what it sealed for the same row, and the sealed text does not contain the secret', () => {
    const box = createSecretBox(randomBytes(32));
    const sealed = box.seal('whsec_abc', 'row-1');
    expect(sealed).not.toContain('whsec_abc');
    expect(box.open(sealed, 'row-1')).toBe('whsec_abc');
  });

  it('refuses a sealed value copied onto another row', () => {
    const box = createSecretBox(randomBytes(32));
    expect(() => box.open(box.seal('whsec_abc', 'row-1'), 'row-2')).toThrow();
  });

  it('refuses a value sealed under another key', () => {
    const sealed = createSecretBox(randomBytes(32)).seal('whsec_abc', 'row-1');
    expect(() => createSecretBox(randomBytes(32)).open(sealed, 'row-1')).toThrow();
  });

  it('creates the key file next to the database with mode 0600 and reuses it', () => {
    const db = join(tempDir(), 'store.db');
    const first = loadSecretBox(db, [], {});
    const sealed = first.seal('whsec_abc', 'row-1');
    expect(statSync(`${db}.key`).mode & 0o777).toBe(0o600);
    expect(loadSecretBox(db, [], {}).open(sealed, 'row-1')).toBe('whsec_abc');
    expect(Buffer.from(readFileSync(`${db}.key`, 'utf8').trim(), 'base64')).toHaveLength(32);
  });

  it('prefers SWITCHBOARD_SECRET_KEY and refuses a key of the wrong size', () => {
    const key = randomBytes(32).toString('base64');
    const sealed = loadSecretBox(':memory:', [], { SWITCHBOARD_SECRET_KEY: key }).seal('s', 'r');
    expect(loadSecretBox(join(tempDir(), 'x.db'), [], { SWITCHBOARD_SECRET_KEY: key }).open(sealed, 'r')).toBe('s');
    expect(() => loadSecretBox(':memory:', [], { SWITCHBOARD_SECRET_KEY: 'c2hvcnQ=' })).toThrow(/32 bytes/);
  });
});

/**
 * Issue 19, defect 8: a database restored without its key file got a fresh key, and every sealed value
 * (router decision excerpts, webhook secrets) read back empty, with nothing logged.
 */
describe('a key that cannot open what the store holds', () => {
  function sealedStore(): { db: string; stored: SealedValue[] } {
    const db = join(tempDir(), 'store.db');
    const box = loadSecretBox(db, [], {});
    return { db, stored: [{ sealed: box.seal('the prompt', 'req_1'), associated: 'req_1' }] };
  }

  it('refuses a missing key file when the store holds sealed values, naming the file, and creates none', () => {
    const { db, stored } = sealedStore();
    rmSync(`${db}.key`);
    expect(() => loadSecretBox(db, stored, {})).toThrow(SecretKeyError);
    expect(() => loadSecretBox(db, stored, {})).toThrow(`the key file ${db}.key is missing`);
    expect(existsSync(`${db}.key`)).toBe(false);
  });

  it('refuses a key file that is not the one the values were sealed with', () => {
    const { db, stored } = sealedStore();
    writeFileSync(`${db}.key`, `${randomBytes(32).toString('base64')}\n`);
    expect(() => loadSecretBox(db, stored, {})).toThrow(new RegExp(`^${db}\\.key is not the key`));
  });

  it('refuses a SWITCHBOARD_SECRET_KEY that does not open them, naming the variable', () => {
    const { db, stored } = sealedStore();
    expect(() => loadSecretBox(db, stored, { SWITCHBOARD_SECRET_KEY: randomBytes(32).toString('base64') })).toThrow(/^SWITCHBOARD_SECRET_KEY is not the key/);
  });

  it('accepts the right key when only some stored values open (older ones lost before this check)', () => {
    const { db, stored } = sealedStore();
    const lost = { sealed: createSecretBox(randomBytes(32)).seal('old', 'req_0'), associated: 'req_0' };
    expect(loadSecretBox(db, [lost, ...stored], {}).open(stored[0]?.sealed ?? '', 'req_1')).toBe('the prompt');
  });

  it('still creates the key of a store with nothing sealed', () => {
    const db = join(tempDir(), 'fresh.db');
    loadSecretBox(db, [], {});
    expect(existsSync(`${db}.key`)).toBe(true);
  });

  it('reads the newest sealed webhook secret, decision excerpt and TOTP secret, skipping empty excerpts', () => {
    const db = openDatabase(':memory:');
    try {
      expect(storedSealedValues(db)).toEqual([]);
      const decision = db.prepare(
        "INSERT INTO routing_decisions (request_id, project_id, workspace_id, created_at, route_reason, query_preview, detail) VALUES (?, 'proj_a', NULL, 0, 'semantic', ?, '{}')",
      );
      decision.run('req_1', 'v1.sealed-1');
      decision.run('req_2', 'v1.sealed-2');
      decision.run('req_3', '');
      expect(storedSealedValues(db)).toEqual([{ sealed: 'v1.sealed-2', associated: 'req_2' }]);
      db.prepare("INSERT INTO projects (id, uuid, slug, name, plan, requests_per_minute, tokens_per_minute, created_at, updated_at) VALUES ('proj_a', 'u-a', 'a', 'A', 'paid', 0, 0, 0, 0)").run();
      const hook = db.prepare(
        "INSERT INTO webhook_endpoints (id, project_id, url, secret_sealed, events, is_active, metadata, created_at, updated_at) VALUES (?, 'proj_a', 'https://example.com', ?, '[]', 1, '{}', 0, 0)",
      );
      hook.run('wh_1', 'v1.hook-1');
      hook.run('wh_2', 'v1.hook-2');
      expect(storedSealedValues(db)).toEqual([
        { sealed: 'v1.hook-2', associated: 'wh_2' },
        { sealed: 'v1.sealed-2', associated: 'req_2' },
      ]);
      // A dashboard user's TOTP secret counts too (users without two-factor have none).
      const user = db.prepare('INSERT INTO dashboard_users (id, email, name, totp_secret_sealed, created_at, updated_at) VALUES (?, ?, ?, ?, 0, 0)');
      user.run('usr_1', 'a@example.com', 'A', 'v1.totp-1');
      user.run('usr_2', 'b@example.com', 'B', null);
      expect(storedSealedValues(db)).toContainEqual({ sealed: 'v1.totp-1', associated: 'usr_1' });
    } finally {
      db.close();
    }
  });
});
