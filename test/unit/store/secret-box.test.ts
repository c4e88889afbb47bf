import { randomBytes } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createSecretBox, loadSecretBox } from '../../../src/store/secret-box.js';
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
    const first = loadSecretBox(db, {});
    const sealed = first.seal('whsec_abc', 'row-1');
    expect(statSync(`${db}.key`).mode & 0o777).toBe(0o600);
    expect(loadSecretBox(db, {}).open(sealed, 'row-1')).toBe('whsec_abc');
    expect(Buffer.from(readFileSync(`${db}.key`, 'utf8').trim(), 'base64')).toHaveLength(32);
  });

  it('prefers SWITCHBOARD_SECRET_KEY and refuses a key of the wrong size', () => {
    const key = randomBytes(32).toString('base64');
    const sealed = loadSecretBox(':memory:', { SWITCHBOARD_SECRET_KEY: key }).seal('s', 'r');
    expect(loadSecretBox(join(tempDir(), 'x.db'), { SWITCHBOARD_SECRET_KEY: key }).open(sealed, 'r')).toBe('s');
    expect(() => loadSecretBox(':memory:', { SWITCHBOARD_SECRET_KEY: 'c2hvcnQ=' })).toThrow(/32 bytes/);
  });
});
