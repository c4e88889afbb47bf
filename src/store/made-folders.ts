/**
 * Undoing `mkdirSync(dir, { recursive: true })` after a failed backup or restore: the folders it made for
 * `dir` are removed again, so a failed command leaves no trace to be mistaken for a store or a backup.
 */
import { rmdirSync } from 'node:fs';
import { dirname } from 'node:path';

/**
 * Removes `dir` and its parents up to `firstMade` (what mkdir returned; undefined: it made none), each only
 * while it is empty: a folder someone else wrote into meanwhile is theirs too.
 */
export function removeMadeFolders(dir: string, firstMade: string | undefined): void {
  if (firstMade === undefined) return;
  for (let folder = dir; folder !== dirname(firstMade); folder = dirname(folder)) {
    try {
      rmdirSync(folder);
    } catch {
      return; // not empty: not only ours
    }
  }
}
