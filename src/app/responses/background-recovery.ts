/**
 * The resume rule of background responses (docs/decisions.md "Background responses"): each background
 * turn runs at most once, so at start, and whenever a sibling instance is found dead, the responses a
 * stopped instance left running are failed "interrupted", never run again. A live sibling's turns are its
 * own (issue 12); the store judges which owners are gone.
 */
import type { RecoveryCue } from '../../core/coordination/recovery-cue.js';
import type { StoredResponses } from '../../core/store/responses-store.js';
import type { Logger } from '../../log.js';

/** The error of a background response that was running when the gateway stopped (it is not run again). */
export const INTERRUPTED = { code: 'interrupted', message: 'The gateway stopped while this background response was in progress; it was not run again.' } as const;

export interface BackgroundRecovery {
  /** The first recovery (at creation) is done; a failure of it was logged and the next sweep retries. */
  readonly recovered: Promise<void>;
  /** Stops listening for sweeps and waits for a recovery under way. */
  stop(): Promise<void>;
}

export function startBackgroundRecovery(repo: StoredResponses, logger: Logger, instances: RecoveryCue): BackgroundRecovery {
  // One recovery at a time: a sweep that comes while one runs is covered by it.
  let recovering: Promise<void> | null = null;
  const recover = (): Promise<void> =>
    (recovering ??= Promise.resolve()
      .then(() => repo.failRunning(INTERRUPTED, 'abandoned'))
      .then(
        (interrupted) => {
          if (interrupted > 0) logger.warn({ responses: interrupted }, 'background responses in progress in a stopped gateway instance were failed "interrupted" (run at most once)');
        },
        (err: unknown) => logger.error({ err }, 'background responses: recovering those of stopped instances failed; the next sweep tries again'),
      )
      .finally(() => (recovering = null)));
  const recovered = recover();
  const stopListening = instances.onSweep(() => void recover());
  return {
    recovered,
    async stop() {
      stopListening();
      await recovering;
    },
  };
}
