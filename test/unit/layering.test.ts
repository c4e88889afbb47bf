/**
 * The layering of ARCHITECTURE.md ("Dependencies point one way"), as a test (issue 12): every import and
 * re-export of every file under src/ is read (a regex over its import/export-from lines) and checked
 * against the folders it may not reach. A wrong-way import fails here, naming the file and the import;
 * the ones that existed when the rule was written are listed below, each with its reason, so the rule
 * holds for new code while they are moved out one by one.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '../..');
const SRC = join(ROOT, 'src');

interface Rule {
  /** The layer: a folder under src/. */
  readonly layer: string;
  /** Folders under src/ (or files, without `.ts`) it must not import. */
  readonly forbidden: readonly string[];
}

const RULES: readonly Rule[] = [
  // The domain: pure, receives everything from the composition root.
  { layer: 'core', forbidden: ['http', 'routes', 'app', 'store', 'upstream', 'pool', 'router', 'dashboard', 'mcp', 'exec', 'batches', 'workers', 'coordination', 'main', 'cli'] },
  // uWebSockets.js only: knows HTTP, nothing of models, keys or SQLite (src/http/README.md).
  { layer: 'http', forbidden: ['routes', 'app', 'store', 'core', 'upstream', 'router', 'dashboard', 'mcp', 'exec'] },
  // Use cases: no transport. What they need of a request or a socket is declared in src/app (turn-io.ts).
  { layer: 'app', forbidden: ['http', 'routes', 'dashboard', 'mcp'] },
  // Routes parse, authenticate, call src/app and shape the answer: a model call is a use case (issue 12),
  // and SQL is behind the store's ports (src/core/store) or a use case.
  { layer: 'routes', forbidden: ['upstream', 'store'] },
  // Port implementations: below the use cases and every transport.
  { layer: 'store', forbidden: ['http', 'routes', 'app', 'dashboard', 'mcp'] },
  // Tracing (issue 34): its port is imported by http, app and upstream, so it imports none of them.
  { layer: 'tracing', forbidden: ['http', 'routes', 'app', 'store', 'upstream', 'pool', 'router', 'dashboard', 'mcp', 'exec', 'batches', 'workers', 'coordination', 'main', 'cli'] },
];

/**
 * Wrong-way imports that predate the test: `file -> imported file` (paths under src/, with `.ts`), each
 * with why it is still there. Remove an entry when its import is moved; the test fails on an entry that
 * no longer matches anything, so the list cannot go stale.
 */
const KNOWN: Readonly<Record<string, string>> = {
  // No storage port in src/core/store for the webhook outbox's test-only emitter (every aggregate the
  // routes read or write has one).
  'routes/test-events.ts -> store/webhook-outbox.ts': 'the test-only event route writes the outbox; no outbox port in core/store yet',
};

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return sourceFiles(path);
    return e.name.endsWith('.ts') ? [path] : [];
  });
}

/** The relative module specifiers of a file's `import ... from` and `export ... from` (and `import('...')`). */
function importsOf(text: string): string[] {
  const found: string[] = [];
  const patterns = [/^\s*(?:import|export)\b[^'"]*?\bfrom\s*['"]([^'"]+)['"]/gm, /^\s*import\s*['"]([^'"]+)['"]/gm, /\bimport\(\s*['"]([^'"]+)['"]\s*\)/g];
  for (const pattern of patterns) for (const m of text.matchAll(pattern)) if (m[1]) found.push(m[1]);
  return found.filter((s) => s.startsWith('.'));
}

/** `src/`-relative path of an import, `.js` read as the `.ts` it is compiled from. */
function target(file: string, specifier: string): string {
  return relative(SRC, resolve(dirname(file), specifier)).replace(/\.js$/, '.ts');
}

const topOf = (path: string): string => path.split('/')[0]?.replace(/\.ts$/, '') ?? '';

function violations(): string[] {
  const found: string[] = [];
  for (const file of sourceFiles(SRC)) {
    const from = relative(SRC, file);
    const rule = RULES.find((r) => topOf(from) === r.layer && from.includes('/'));
    if (!rule) continue;
    // Multi-line imports: join each statement onto one line before matching.
    const text = readFileSync(file, 'utf8').replace(/\{[^}]*\}/g, (block) => block.replace(/\s+/g, ' '));
    for (const specifier of importsOf(text)) {
      const to = target(file, specifier);
      if (rule.forbidden.includes(topOf(to))) found.push(`${from} -> ${to}`);
    }
  }
  return found.sort();
}

/** Files outside src/wiring/ that import it: the composition root's parts are for src/main.ts alone (src/wiring/README.md). */
function wiringImporters(): string[] {
  const found: string[] = [];
  for (const file of sourceFiles(SRC)) {
    const from = relative(SRC, file);
    if (from === 'main.ts' || topOf(from) === 'wiring') continue;
    const text = readFileSync(file, 'utf8').replace(/\{[^}]*\}/g, (block) => block.replace(/\s+/g, ' '));
    for (const specifier of importsOf(text)) if (topOf(target(file, specifier)) === 'wiring') found.push(`${from} -> ${target(file, specifier)}`);
  }
  return found.sort();
}

describe('layering (ARCHITECTURE.md: dependencies point one way)', () => {
  const found = violations();

  it('lets nothing but main.ts import the composition root\'s parts (src/wiring/)', () => {
    expect(wiringImporters()).toEqual([]);
  });

  it('finds no wrong-way import outside the known list', () => {
    expect(found.filter((v) => !(v in KNOWN))).toEqual([]);
  });

  it('lists no known exception that no longer exists', () => {
    expect(Object.keys(KNOWN).filter((v) => !found.includes(v))).toEqual([]);
  });

  it('reads imports the way the rule needs (multi-line, type-only, re-exports, dynamic)', () => {
    const text = "import {\n  a,\n  b,\n} from '../x.js';\nimport type { T } from './y.js';\nexport { z } from '../../w.js';\nconst m = await import('../v.js');\nimport 'node:fs';";
    const joined = text.replace(/\{[^}]*\}/g, (block) => block.replace(/\s+/g, ' '));
    expect(importsOf(joined).sort()).toEqual(['../../w.js', '../v.js', '../x.js', './y.js']);
  });
});
