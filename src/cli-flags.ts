/**
 * Flag parsing shared by the `switchboard` subcommands (cli.ts and the cli-*.ts files it dispatches to).
 * It lives apart from cli.ts because cli.ts runs its `main` when imported: a subcommand module importing
 * from it would start the command a second time.
 */
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { z } from 'zod';
import { formatZodIssues } from './core/zod-issue-lines.js';

/** Bad flags or arguments: the CLI prints the message and the usage text, and exits 2. */
export class UsageError extends Error {}

export const port = z.coerce.number().int().min(0).max(65535);
export const csv = z.string().transform((s) => s.split(',').map((x) => x.trim()).filter(Boolean));

export function parseFlags<T extends z.ZodType>(argv: string[], options: ParseArgsConfig['options'], schema: T): z.infer<T> {
  return parseCommandLine(argv, options, schema, 0).flags;
}

/**
 * Flags plus exactly `positionals` positional arguments (a key id: `keys revoke key_...`). The names in
 * the messages are the flags as typed (`--project: ...`).
 */
export function parseCommandLine<T extends z.ZodType>(
  argv: string[],
  options: ParseArgsConfig['options'],
  schema: T,
  positionals: number,
  positionalName = 'argument',
): { flags: z.infer<T>; positionals: string[] } {
  let parsed: { values: Record<string, unknown>; positionals: string[] };
  try {
    parsed = parseArgs({ args: argv, options: options ?? {}, strict: true, allowPositionals: positionals > 0 });
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  if (parsed.positionals.length !== positionals) {
    throw new UsageError(
      parsed.positionals.length < positionals
        ? `the ${positionalName} is required`
        : `unexpected argument ${JSON.stringify(parsed.positionals[positionals])}`,
    );
  }
  const result = schema.safeParse(parsed.values);
  if (!result.success) {
    throw new UsageError(formatZodIssues(result.error.issues).replace(/^([\w-]+):/gm, '--$1:'));
  }
  return { flags: result.data, positionals: parsed.positionals };
}
