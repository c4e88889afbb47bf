/**
 * Issue 19, defect 9: relative paths in a config file were taken from the working directory, so
 * `keys create --config FILE` run from another folder minted into a new, empty database. They are now
 * from the file's folder; parseConfig without a folder leaves them as written.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfigFile, parseConfig } from '../../src/config.js';

describe('paths in a config file', () => {
  const dir = mkdtempSync(join(tmpdir(), 'switchboard-config-paths-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  function configFile(text: string): string {
    const folder = join(dir, 'etc', 'switchboard');
    mkdirSync(folder, { recursive: true });
    const file = join(folder, 'config.yaml');
    writeFileSync(file, text);
    return file;
  }

  it('takes a relative storage.path from the config file folder, not the working directory', () => {
    const file = configFile('storage: { path: db/gw.db }\n');
    expect(loadConfigFile(file).storage.path).toBe(join(dir, 'etc', 'switchboard', 'db', 'gw.db'));
    // The same file named by a relative path from elsewhere resolves to the same store.
    expect(loadConfigFile(relative(process.cwd(), file)).storage.path).toBe(join(dir, 'etc', 'switchboard', 'db', 'gw.db'));
  });

  it('takes the default storage.path from the config file folder too', () => {
    expect(loadConfigFile(configFile('{}\n')).storage.path).toBe(join(dir, 'etc', 'switchboard', 'data', 'switchboard.db'));
  });

  it('keeps an absolute storage.path and ":memory:" as written', () => {
    expect(loadConfigFile(configFile('storage: { path: /var/lib/switchboard/gw.db }\n')).storage.path).toBe('/var/lib/switchboard/gw.db');
    expect(loadConfigFile(configFile('storage: { path: ":memory:" }\n')).storage.path).toBe(':memory:');
  });

  it('takes relative TLS files from the config file folder', () => {
    const config = loadConfigFile(configFile('server: { tls: { cert_file: tls/cert.pem, key_file: /etc/tls/key.pem } }\n'));
    expect(config.server.tls).toEqual({ cert_file: join(dir, 'etc', 'switchboard', 'tls', 'cert.pem'), key_file: '/etc/tls/key.pem' });
  });

  it('leaves paths as written when parsing without a file', () => {
    expect(parseConfig({ storage: { path: 'db/gw.db' } }).storage.path).toBe('db/gw.db');
  });
});
