/**
 * The layering of ARCHITECTURE.md ("Dependencies point one way"), as a test (issues 12 and 33).
 *
 * The units: every folder under src/, each top-level file of src/ (a group for `cli*.ts`, `config*.ts`,
 * `demo*.ts`) and the piscina tasks of the top-level `workers/` folder (outside src/). LAYERS below puts
 * every unit in a layer, lowest first, and says which units of LOWER layers it may value-import:
 *
 *   leaves          errors, clock, json-depth, byte-cache, version, thread-priority, log-sink, log-levels,
 *                   metrics, webhooks-verify: import nothing of ours; every unit above them may import them
 *   leaf helpers    json-body.ts (over errors and json-depth)
 *   domain          core/: pure rules and the ports the use cases need
 *   config sections config/: the YAML file's zod schema, one file per part of it, and its loader
 *   configuration   config*.ts: the entry the rest imports config/ through, and the vocabulary it declares
 *   wire schemas    schemas/ (zod per API family); the piscina tasks of workers/ (outside src/)
 *   adapters        store/, upstream/, pool/, coordination/, tracing/, http/, log.ts
 *   components      router/, exec/, simulator/, access-line.ts, metrics-workers.ts
 *   use cases       app/
 *   features        batches/, mcp/, dashboard/, webhook-system.ts, agent/
 *   transport       routes/
 *   composition     main.ts: the one place that picks implementations and wires them
 *   entry points    workers/ (one gateway per thread), demo*.ts, then cli*.ts
 *
 * The rules, each a test below:
 * - Value imports (`import`, `export ... from`, `import()`, a side-effect import) go only to the units
 *   the table lists for the importer, or the leaves. A unit never lists one of its own layer or above,
 *   so the table itself has no cycle; a folder may still be kept from a lower one (router/ and exec/ get
 *   their repositories from main.ts, not from store/; routes/ reach SQL through core's ports).
 * - Type-only imports (`import type`, `export type`, `import { type A, type B }`) are erased by tsc: they
 *   cannot load a module or make a load-order cycle, so they may point at any unit but the composition
 *   root and the entry points (core/ names the config's types, store/ the record types exec/ declares).
 * - The value-import graph between units, exceptions included, has no cycle.
 * - Every folder and top-level file under src/ is in the table, and every unit in the table exists: a new
 *   folder cannot slip past the rule unlisted.
 * Exceptions are file-to-file imports in EXCEPTIONS, each with its reason; one that no longer matches an
 * import fails the test, so the list cannot go stale.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '../..');
const SRC = join(ROOT, 'src');
const TASKS = join(ROOT, 'workers');

const LEAVES = ['errors.ts', 'config-error.ts', 'clock.ts', 'json-depth.ts', 'byte-cache.ts', 'version.ts', 'thread-priority.ts', 'log-sink.ts', 'log-levels.ts', 'metrics.ts', 'webhooks-verify.ts', 'request-id.ts'];

/** Layers, lowest first: unit -> the units of lower layers it may value-import (the leaves always). */
const LAYERS: readonly (readonly [name: string, units: Readonly<Record<string, readonly string[]>>])[] = [
  ['leaves', Object.fromEntries(LEAVES.map((leaf) => [leaf, []]))],
  ['leaf helpers', { 'json-body.ts': [] }],
  ['domain', { 'core/': [] }],
  ['config sections', { 'config/': ['core/'] }],
  ['configuration', { 'config*.ts': ['core/', 'config/'] }],
  ['wire schemas', { 'schemas/': ['json-body.ts', 'core/', 'config*.ts'], '../workers/': ['core/'] }],
  [
    'adapters',
    {
      'store/': ['core/'],
      'upstream/': ['core/'],
      'pool/': ['core/', '../workers/'],
      'coordination/': ['core/'],
      'tracing/': [],
      'http/': ['json-body.ts'],
      'log.ts': [],
    },
  ],
  [
    'components',
    {
      'router/': ['core/', 'schemas/', 'pool/', 'upstream/'],
      'exec/': ['core/', 'schemas/'],
      'simulator/': ['core/', 'http/'],
      'access-line.ts': ['http/'],
      'metrics-workers.ts': ['coordination/'],
    },
  ],
  ['use cases', { 'app/': ['core/', 'schemas/', 'upstream/', 'router/'] }],
  [
    'features',
    {
      'batches/': ['core/'],
      'mcp/': ['core/', 'schemas/', 'exec/', 'app/'],
      'dashboard/': ['core/', 'schemas/', 'app/'],
      'webhook-system.ts': ['core/', 'store/', 'upstream/'],
      'agent/': ['core/', 'exec/'],
    },
  ],
  ['transport', { 'routes/': ['core/', 'config*.ts', 'schemas/', 'http/', 'app/', 'batches/', 'mcp/'] }],
  [
    'composition parts',
    {
      // The composition root's modules, one per subsystem (src/wiring/README.md): only main.ts imports them.
      'wiring/': [
        'core/', 'config*.ts', 'store/', 'upstream/', 'pool/', 'coordination/', 'tracing/', 'http/', 'log.ts', 'router/', 'exec/',
        'access-line.ts', 'metrics-workers.ts', 'app/', 'batches/', 'mcp/', 'dashboard/', 'webhook-system.ts', 'routes/',
      ],
    },
  ],
  [
    'composition',
    {
      'main.ts': [
        'core/', 'config*.ts', 'store/', 'upstream/', 'pool/', 'coordination/', 'tracing/', 'http/', 'log.ts', 'router/', 'exec/',
        'access-line.ts', 'metrics-workers.ts', 'app/', 'batches/', 'mcp/', 'dashboard/', 'webhook-system.ts', 'routes/', 'wiring/',
      ],
    },
  ],
  ['gateway threads', { 'workers/': ['config*.ts', 'store/', 'coordination/', 'http/', 'log.ts', 'main.ts'] }],
  ['demo', { 'demo*.ts': ['config*.ts', 'main.ts'] }],
  [
    'command line',
    {
      'cli*.ts': [
        'core/', 'config*.ts', 'schemas/', 'store/', 'upstream/', 'http/', 'log.ts', 'exec/', 'simulator/', 'dashboard/', 'agent/',
        'routes/', 'main.ts', 'workers/',
      ],
    },
  ],
];

/** The composition root and the entry points: nothing below them imports them, not even a type. */
const ENTRY_LAYERS = ['composition', 'gateway threads', 'demo', 'command line'];

/** What the imports-follow-the-table rule allows that it should not: `file -> imported file`, with why. None today. */
const EXCEPTIONS: Readonly<Record<string, string>> = {};

const unitLayer = new Map<string, number>();
const mayImport = new Map<string, ReadonlySet<string>>();
LAYERS.forEach(([, units], index) => {
  for (const [unit, allowed] of Object.entries(units)) {
    unitLayer.set(unit, index);
    mayImport.set(unit, new Set(index === 0 ? allowed : [...allowed, ...LEAVES]));
  }
});

/** The unit of a path relative to the repository root. */
function unitOf(path: string): string {
  if (path.startsWith('workers/')) return '../workers/';
  const inSrc = path.replace(/^src\//, '');
  if (inSrc.includes('/')) return `${inSrc.split('/')[0]}/`;
  if (LEAVES.includes(inSrc)) return inSrc;
  for (const group of ['cli', 'config', 'demo']) if (inSrc.startsWith(group)) return `${group}*.ts`;
  return inSrc;
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return sourceFiles(path);
    return e.name.endsWith('.ts') ? [path] : [];
  });
}

interface Import {
  readonly specifier: string;
  readonly typeOnly: boolean;
}

/**
 * The relative imports of a file's text, each with whether tsc erases it: `import type`, `export type`
 * and an import whose every named binding is `type X` are type-only; `import()` and side-effect imports
 * are values.
 */
function importsOf(source: string): Import[] {
  // Multi-line imports: each brace block onto one line before matching.
  const text = source.replace(/\{[^}]*\}/g, (block) => block.replace(/\s+/g, ' '));
  const found: Import[] = [];
  for (const m of text.matchAll(/^\s*(import|export)(\s+type\b)?([^'"]*?)\bfrom\s*['"]([^'"]+)['"]/gm)) {
    const clause = m[3] ?? '';
    const named = /^\s*\{([^}]*)\}\s*$/.exec(clause)?.[1];
    const allTypes = named !== undefined && named.split(',').filter((s) => s.trim()).every((s) => /^\s*type\s/.test(s));
    found.push({ specifier: m[4] ?? '', typeOnly: m[2] !== undefined || allTypes });
  }
  for (const m of text.matchAll(/^\s*import\s*['"]([^'"]+)['"]/gm)) found.push({ specifier: m[1] ?? '', typeOnly: false });
  for (const m of text.matchAll(/\bimport\(\s*['"]([^'"]+)['"]\s*\)/g)) found.push({ specifier: m[1] ?? '', typeOnly: false });
  return found.filter((i) => i.specifier.startsWith('.'));
}

interface Edge {
  readonly from: string;
  readonly to: string;
  readonly fromUnit: string;
  readonly toUnit: string;
  readonly typeOnly: boolean;
}

/** Every import between two units, paths from the repository root, `.js` read as its `.ts`. */
function edges(): Edge[] {
  const found: Edge[] = [];
  for (const file of [...sourceFiles(SRC), ...sourceFiles(TASKS)]) {
    const from = relative(ROOT, file);
    for (const { specifier, typeOnly } of importsOf(readFileSync(file, 'utf8'))) {
      const to = relative(ROOT, resolve(dirname(file), specifier)).replace(/\.js$/, '.ts');
      const fromUnit = unitOf(from);
      const toUnit = unitOf(to);
      if (fromUnit !== toUnit) found.push({ from, to, fromUnit, toUnit, typeOnly });
    }
  }
  return found;
}

/** A cycle of the unit graph, as `a -> b -> ... -> a`, or undefined. */
function cycleOf(graph: ReadonlyMap<string, ReadonlySet<string>>): string | undefined {
  const state = new Map<string, 'open' | 'done'>();
  const path: string[] = [];
  const visit = (unit: string): string | undefined => {
    if (state.get(unit) === 'done') return undefined;
    if (state.get(unit) === 'open') return [...path.slice(path.indexOf(unit)), unit].join(' -> ');
    state.set(unit, 'open');
    path.push(unit);
    for (const next of graph.get(unit) ?? []) {
      const cycle = visit(next);
      if (cycle) return cycle;
    }
    path.pop();
    state.set(unit, 'done');
    return undefined;
  };
  for (const unit of graph.keys()) {
    const cycle = visit(unit);
    if (cycle) return cycle;
  }
  return undefined;
}

/** Imports of src/wiring/ (type-only ones too) from anywhere but main.ts: the composition root's parts are for it alone (src/wiring/README.md). */
function wiringImporters(): string[] {
  return edges()
    .filter((e) => e.toUnit === 'wiring/' && e.fromUnit !== 'main.ts')
    .map((e) => `${e.from} -> ${e.to}`)
    .sort();
}

describe('layering (ARCHITECTURE.md: dependencies point one way)', () => {
  const all = edges();
  const wrongWay = all.filter((e) => !e.typeOnly && !mayImport.get(e.fromUnit)?.has(e.toUnit)).map((e) => `${e.from} -> ${e.to}`);

  it('lets nothing but main.ts import the composition root\'s parts (src/wiring/)', () => {
    expect(wiringImporters()).toEqual([]);
  });

  it('puts every folder and top-level file of src/ in the table, and lists no unit that does not exist', () => {
    const present = new Set([...readdirSync(SRC, { withFileTypes: true }).map((e) => unitOf(`src/${e.name}${e.isDirectory() ? '/' : ''}`)), '../workers/']);
    const presentUnits = [...present].filter((u) => u.endsWith('/') || u.endsWith('.ts'));
    expect(presentUnits.filter((u) => !unitLayer.has(u))).toEqual([]);
    expect([...unitLayer.keys()].filter((u) => !present.has(u))).toEqual([]);
    expect(existsSync(TASKS)).toBe(true);
  });

  it('lets each unit import only units of lower layers, so the table has no cycle', () => {
    const upward = [...mayImport].flatMap(([unit, allowed]) =>
      [...allowed].filter((to) => (unitLayer.get(to) ?? Infinity) >= (unitLayer.get(unit) ?? -1)).map((to) => `${unit} -> ${to}`),
    );
    expect(upward).toEqual([]);
  });

  it('finds no value import the table does not allow, outside the listed exceptions', () => {
    expect(wrongWay.filter((v) => !(v in EXCEPTIONS))).toEqual([]);
  });

  it('lists no exception that no longer exists', () => {
    expect(Object.keys(EXCEPTIONS).filter((v) => !wrongWay.includes(v))).toEqual([]);
  });

  it('finds no import, not even of a type, of the composition root or an entry point from below them', () => {
    const entries = new Set(LAYERS.filter(([name]) => ENTRY_LAYERS.includes(name)).flatMap(([, units]) => Object.keys(units)));
    const up = all.filter((e) => entries.has(e.toUnit) && (unitLayer.get(e.toUnit) ?? 0) >= (unitLayer.get(e.fromUnit) ?? 0));
    expect(up.map((e) => `${e.from} -> ${e.to}`)).toEqual([]);
  });

  it('finds no cycle between units in the value imports, exceptions included', () => {
    const graph = new Map<string, Set<string>>();
    for (const e of all) if (!e.typeOnly) graph.set(e.fromUnit, (graph.get(e.fromUnit) ?? new Set()).add(e.toUnit));
    expect(cycleOf(graph)).toBeUndefined();
  });

  it('reads imports the way the rule needs (multi-line, type-only, re-exports, dynamic, side effects)', () => {
    const text = [
      "import {\n  a,\n  b,\n} from '../x.js';",
      "import type { T } from './y.js';",
      "import { type U, type V } from './u.js';",
      "import { type W, w } from './mixed.js';",
      "export { z } from '../../w.js';",
      "export type { Z } from './z.js';",
      "const m = await import('../v.js');",
      "import './effect.js';",
      "import 'node:fs';",
    ].join('\n');
    expect(importsOf(text).sort((p, q) => p.specifier.localeCompare(q.specifier))).toEqual([
      { specifier: '../../w.js', typeOnly: false },
      { specifier: '../v.js', typeOnly: false },
      { specifier: '../x.js', typeOnly: false },
      { specifier: './effect.js', typeOnly: false },
      { specifier: './mixed.js', typeOnly: false },
      { specifier: './u.js', typeOnly: true },
      { specifier: './y.js', typeOnly: true },
      { specifier: './z.js', typeOnly: true },
    ]);
  });

  it('detects a cycle in a unit graph', () => {
    const graph = new Map([['a/', new Set(['b/'])], ['b/', new Set(['c/'])], ['c/', new Set(['a/'])]]);
    expect(cycleOf(graph)).toBe('a/ -> b/ -> c/ -> a/');
    expect(cycleOf(new Map([['a/', new Set(['b/'])]]))).toBeUndefined();
  });
});
