/**
 * Zod issues as lines for a person at a terminal (a config file, a command's flags, an agent's manifest),
 * not as an API error: those go through schemas/issues.ts. Pure.
 */
import type { z } from 'zod';

/** `projects[0].endpoints[1].slug: must be ...` — one line per issue, the path first. */
export function formatZodIssues(issues: readonly z.core.$ZodIssue[], prefix = ''): string {
  return issues
    .map((i) => {
      const path = i.path.reduce<string>(
        (acc, seg) => (typeof seg === 'number' ? `${acc}[${seg}]` : acc ? `${acc}.${String(seg)}` : String(seg)),
        prefix,
      );
      return `${path || '(root)'}: ${i.message}`;
    })
    .join('\n');
}
