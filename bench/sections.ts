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
