/** The product version from package.json (found from src/ or dist/src/), for User-Agent strings. */
import { readFileSync } from 'node:fs';

function readVersion(): string {
  for (const rel of ['../package.json', '../../package.json']) {
    try {
      const pkg = JSON.parse(readFileSync(new URL(rel, import.meta.url), 'utf8')) as { name?: unknown; version?: unknown };
      if (pkg.name === 'switchboard' && typeof pkg.version === 'string') return pkg.version;
    } catch {
      // not at this level
    }
  }
  return '0.0.0';
}

export const VERSION = readVersion();
