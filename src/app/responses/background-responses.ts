/**
 * Background responses (`background: true`, docs/decisions.md "Background responses"): job control. The
 * creating request is answered at once with the Response `queued` (by the route); the turn then runs here,
 * with no client connection, through the very chat use case a foreground response takes (chat-turn.ts:
 * capabilities, context window, dispatch with its deadline, usage ledger), its answer translated by
 * ResponsesReply into the stored row (`in_progress`, then `completed`, `incomplete` or `failed`, with the
 * response.* event). Cancel aborts the upstream call as a client abort would.
 *
 * A streamed background response (`stream: true` too) writes its events into its run (background-run.ts):
 * followers may come and go without stopping the turn. Runs of finished streamed responses are kept for
 * the newest KEPT_STREAMS only.
 */
import type { AuthenticatedKey } from '../../core/auth/authenticate.js';
import type { RecoveryCue } from '../../core/coordination/recovery-cue.js';
import type { EndpointRecord } from '../../core/records.js';
import { asResponsesRefusal, type ResponsesOrigin } from '../../core/responses/chat-refusal.js';
import type { ResponseRecord, StoredResponses } from '../../core/store/responses-store.js';
import { toGatewayError } from '../../errors.js';
import type { Logger } from '../../log.js';
import type { ChatRequest } from '../../schemas/chat-request.js';
import type { ChatServices } from '../chat/chat-dispatch.js';
import { serveChatTurn } from '../chat/chat-turn.js';
import { DetachedCaller } from '../detached-caller.js';
import type { TurnSink } from '../turn-io.js';
import { startBackgroundRecovery, INTERRUPTED } from './background-recovery.js';
import { BackgroundRun } from './background-run.js';
import type { ResponsesReply } from './responses-reply.js';

/** Event logs of finished streamed background responses kept for `GET ?stream=true` (the newest). */
export const KEPT_STREAMS = 100;

export interface BackgroundJob {
  /** The creating request's headers (augmentation flags): the turn's. */
  readonly headers: Readonly<Record<string, string>>;
  readonly auth: AuthenticatedKey;
  readonly endpoint: EndpointRecord;
  readonly workspaceId: string | null;
  readonly chatBody: Record<string, unknown>;
  readonly chat: ChatRequest;
  readonly route: 'chat' | 'router';
  readonly streamed: boolean;
  /** What the request sent, so that a refusal of the chat turn is told in Responses terms (chat-refusal.ts). */
  readonly origin: ResponsesOrigin;
  /** The reply the turn answers through, writing to `sink`, with the route's finish callback. */
  readonly reply: (sink: TurnSink) => ResponsesReply;
  /** The stored row while the turn waits (the Response `queued`, answered to the creating request). */
  readonly queued: ResponseRecord;
  /** The Response as stored once the turn starts. */
  readonly inProgress: Record<string, unknown>;
}

export interface BackgroundResponses {
  /** Stores the Response `queued`, then runs its turn after the creating request is answered. */
  start(job: BackgroundJob): Promise<BackgroundRun>;
  /** A streamed run, running or finished with its events still kept (others have no events to follow). */
  find(id: string): BackgroundRun | undefined;
  /** Aborts the turn of a running background response; false: none runs here. */
  cancel(id: string): boolean;
  /**
   * At a graceful stop, after the HTTP drain: turns still running are aborted and failed `interrupted`
   * now (the next start would do it anyway; this way the stop never waits on a model).
   */
  close(): Promise<void>;
  /** The first recovery (at creation) is done; a failure of it was logged and the next sweep retries. */
  readonly recovered: Promise<void>;
}

/** The runs of this instance: those running, and the newest finished streamed ones. */
class RunRegistry {
  readonly running = new Map<string, BackgroundRun>();
  readonly #kept = new Map<string, BackgroundRun>();

  keep(run: BackgroundRun): void {
    this.#kept.set(run.id, run);
    for (const id of this.#kept.keys()) {
      if (this.#kept.size <= KEPT_STREAMS) break;
      this.#kept.delete(id);
    }
  }

  find(id: string): BackgroundRun | undefined {
    return this.running.get(id) ?? this.#kept.get(id);
  }
}

/**
 * Cancelled or deleted through another replica: the turn running here is aborted as a local cancel would.
 * A row that finished meanwhile is left to end by itself (its terminal events are being written).
 */
function watchRemoteCancels(repo: StoredResponses, logger: Logger, runs: RunRegistry): () => void {
  const abortCancelled = async (): Promise<void> => {
    for (const run of [...runs.running.values()]) {
      if (!run.open) continue;
      const row = await repo.get(run.projectId, run.id);
      if (row === null || row.status === 'cancelled') run.cancel();
    }
  };
  return repo.watchCancels(() => {
    abortCancelled().catch((err: unknown) => logger.error({ err }, 'background responses: checking for cancels made through another replica failed'));
  });
}

/** The turn's headers: the creating request's, without its key (checked then) or its body's length. */
function turnHeaders(headers: Readonly<Record<string, string>>): Record<string, string> {
  const copy: Record<string, string> = { ...headers };
  delete copy.authorization;
  delete copy['content-length'];
  return copy;
}

async function execute(services: ChatServices & { responses: StoredResponses }, job: BackgroundJob, run: BackgroundRun, reply: ResponsesReply): Promise<void> {
  const raw = Buffer.from(JSON.stringify(job.chatBody));
  const caller = new DetachedCaller({ requestId: job.queued.id, headers: turnHeaders(job.headers) });
  run.onCancel(() => caller.abort());
  try {
    if (run.cancelled) return;
    // Cancelled or deleted before its turn began (here or through another replica): no turn runs.
    // The row goes `in_progress` as the turn starts; false: it was no longer queued.
    if (!(await services.responses.transition(job.auth.project.id, job.queued.id, 'in_progress', job.inProgress))) run.cancel();
    if (run.cancelled) return;
    await serveChatTurn(services, { ctx: { req: caller, reply }, auth: job.auth, endpoint: job.endpoint, workspaceId: job.workspaceId, raw, parsed: job.chatBody, chat: job.chat, route: job.route, reply });
  } catch (err) {
    // What a foreground client would have got as an error answer becomes the Response's error.
    const e = toGatewayError(asResponsesRefusal(err, job.origin));
    if (!run.cancelled) reply.fail({ code: e.code, message: e.message });
  } finally {
    if (!run.cancelled && !reply.finished) reply.fail({ code: 'internal_error', message: 'The model turn ended without an answer.' });
  }
}

/** Turns still running at a graceful stop: failed `interrupted` in the store, then aborted. */
async function interruptRunning(repo: StoredResponses, logger: Logger, runs: RunRegistry): Promise<void> {
  if (runs.running.size === 0) return;
  const running = [...runs.running.values()];
  const stopped = await repo.failRunning(INTERRUPTED, 'mine').catch((err: unknown) => {
    logger.error({ err }, 'background responses: failing those still running at the stop failed; the next start does it');
    return 0;
  });
  for (const run of running) run.cancel();
  logger.warn({ responses: stopped }, 'background responses still running at the stop were failed "interrupted"');
}

/** `instances`: when to look again for background responses that stopped instances left running (background-recovery.ts). */
export function createBackgroundResponses(services: ChatServices & { responses: StoredResponses }, instances: RecoveryCue): BackgroundResponses {
  const { responses: repo, logger } = services;
  const runs = new RunRegistry();
  const recovery = startBackgroundRecovery(repo, logger, instances);
  const stopWatching = watchRemoteCancels(repo, logger, runs);

  const settle = async (job: BackgroundJob, run: BackgroundRun, reply: ResponsesReply): Promise<void> => {
    try {
      await execute(services, job, run, reply);
    } finally {
      // The run's followers see its end once the outcome is stored (a retrieve then finds it).
      await reply.settled().catch((err: unknown) => logger.error({ err, response: run.id }, 'background response: storing its outcome failed'));
      run.end();
      runs.running.delete(run.id);
      if (job.streamed) runs.keep(run);
    }
  };

  return {
    async start(job) {
      await repo.queue(job.queued);
      const run = new BackgroundRun(job.queued.id, job.auth.project.id, job.streamed);
      const reply = job.reply(run);
      if (job.streamed) reply.openEvents();
      runs.running.set(run.id, run);
      // After the creating request is answered: the turn never delays the `queued` answer.
      setImmediate(() => {
        settle(job, run, reply).catch((err: unknown) => logger.error({ err, response: run.id }, 'background response failed'));
      });
      return run;
    },
    find(id) {
      const run = runs.find(id);
      return run?.streamed ? run : undefined;
    },
    cancel(id) {
      const run = runs.running.get(id);
      if (!run) return false;
      run.cancel();
      return true;
    },
    recovered: recovery.recovered,
    async close() {
      stopWatching();
      await recovery.stop();
      await interruptRunning(repo, logger, runs);
    },
  };
}
