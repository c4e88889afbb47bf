/**
 * Background threads (token counting, the SQLite writers) run reniced so that, where the gateway shares
 * its cores (pinned to one in the bench), their work waits for the event loop instead of preempting it.
 * On Linux, setpriority on pid 0 from a worker renices only the calling thread. Nice 10 still leaves a
 * thread several times the share of a core the writers need at full load. Best effort: where it is
 * refused, the thread keeps normal priority.
 */
import { setPriority } from 'node:os';

export function yieldToEventLoop(): void {
  try {
    setPriority(0, 10);
  } catch {
    // not permitted here: keep the default priority
  }
}
