/**
 * Moves what a restore built in a staging folder into the store's folder, all or nothing. The staging
 * folder sits beside the target (same file system), so each move is a rename: no byte is copied at this
 * point, which is where a full disk or an unreadable backup file would fail. What was moved is moved back
 * out (deleted) if a later move fails, so the store's folder is then as it was before.
 *
 * A folder already at the target (an empty `files/`, or one with only `parts/` and `tmp/` the restore
 * checked) is merged into entry by entry; an entry of the same name is never replaced (rename would do
 * it silently): that is a conflict, and nothing stays moved.
 */
import { existsSync, lstatSync, readdirSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Moves `names` from `staging` into `into`, in the order given (the database last: until it is there, a
 * gateway started on the path makes a new store rather than running on part of one).
 */
export function placeStaged(staging: string, into: string, names: readonly string[]): void {
  const moved: string[] = [];
  try {
    for (const name of names) {
      if (existsSync(join(staging, name))) moveInto(join(staging, name), join(into, name), moved);
    }
  } catch (err) {
    for (const path of moved.reverse()) rmSync(path, { recursive: true, force: true });
    throw err;
  }
}

function moveInto(from: string, to: string, moved: string[]): void {
  const there = lstatSync(to, { throwIfNoEntry: false });
  if (there === undefined) {
    renameSync(from, to);
    moved.push(to);
    return;
  }
  if (!there.isDirectory() || !lstatSync(from).isDirectory()) throw new Error(`${to} already exists: nothing is moved over it`);
  for (const entry of readdirSync(from)) moveInto(join(from, entry), join(to, entry), moved);
}
