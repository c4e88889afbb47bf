import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** bench/RESULTS.md in the source tree (this module runs from dist/bench). */
export const RESULTS_FILE = fileURLToPath(new URL('../../bench/RESULTS.md', import.meta.url));

/**
 * Named sections of bench/RESULTS.md, between `<!-- name -->` and `<!-- /name -->`: a bench that owns one
 * rewrites it and leaves the rest of the file as it was (the full run keeps every such section).
 */
export function spliceNamedSection(markdown: string, name: string, section: string): string {
  const start = `<!-- ${name} -->`;
  const end = `<!-- /${name} -->`;
  const block = `${start}\n${section}\n${end}`;
  const from = markdown.indexOf(start);
  const to = markdown.indexOf(end);
  if (from >= 0 && to > from) return `${markdown.slice(0, from)}${block}${markdown.slice(to + end.length)}`;
  return `${markdown.trimEnd()}\n\n${block}\n`;
}

/** Rewrites one named section of bench/RESULTS.md in place (a standalone bench's output). */
export function writeResultsSection(name: string, section: string): void {
  writeFileSync(RESULTS_FILE, spliceNamedSection(readFileSync(RESULTS_FILE, 'utf8'), name, section));
}
