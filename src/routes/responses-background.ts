/**
 * Background responses (`background: true`, docs/decisions.md "Background responses"). The creating
 * request is answered at once with the Response `queued`; the turn then runs in the gateway as a request
 * the gateway makes of itself (http/synthetic-request.ts) through the very chat path a foreground response
 * takes (chat-turn.ts: capabilities, context window, dispatch with its deadline, usage ledger), its answer
 * translated by ResponsesReply into the stored row (`in_progress`, then `completed`, `incomplete` or
 * `failed`, with the response.* event). Cancel aborts the upstream call as a client abort would.
 *
 * A streamed background response (`stream: true` too) writes its events into a log held here: the creating
 * request follows the log and may go away without stopping the turn; `GET .../{id}?stream=true` follows it
 * from `starting_after`. Logs of finished runs are kept for the newest KEPT_STREAMS only.
 */
import { asResponsesRefusal, type ResponsesOrigin } from '../core/responses/chat-refusal.js';
import type { AuthenticatedKey } from '../core/auth/authenticate.js';
import type { RecoveryCue } from '../core/coordination/recovery-cue.js';
import type { EndpointRecord } from '../core/records.js';
import type { StoredResponses } from '../core/store/responses-store.js';
import { toGatewayError } from '../errors.js';
import type { IncomingRequest } from '../http/request.js';
import type { Reply } from '../http/reply.js';
import type { RouteContext } from '../http/server.js';
import { createSyntheticRequest } from '../http/synthetic-request.js';
import type { Logger } from '../log.js';
import type { ChatRequest } from '../schemas/chat-request.js';
import type { ChatServices } from '../app/chat/chat-dispatch.js';
import type { TurnSink } from '../app/turn-io.js';
import { serveChatTurn } from '../app/chat/chat-turn.js';
import type { ResponsesReply } from '../app/responses/responses-reply.js';

/** Event logs of finished streamed background responses kept for `GET ?stream=true` (the newest). */
export const KEPT_STREAMS = 100;

/** The error of a background response that was running when the gateway stopped (it is not run again). */
export const INTERRUPTED = { code: 'interrupted', message: 'The gateway stopped while this background response was in progress; it was not run again.' } as const;

/**
 * One background turn, and the sink its ResponsesReply writes to: every event frame is kept (frame i has
 * sequence_number i), JSON answers are dropped (the Response is stored by the reply's finish callback).
 */
export class BackgroundRun implements TurnSink {
  readonly id: string;
  readonly projectId: string;
  /** Created with `stream: true`: its frames are the events clients follow. */
  readonly streamed: boolean;
  readonly frames: string[] = [];
  #ended = false;
  #cancelled = false;
  #abort: () => void = () => undefined;
  readonly #listeners = new Set<() => void>();

  constructor(id: string, projectId: string, streamed: boolean) {
    this.id = id;
    this.projectId = projectId;
    this.streamed = streamed;
  }

  get ended(): boolean {
    return this.#ended;
  }

  get cancelled(): boolean {
    return this.#cancelled;
  }

  get open(): boolean {
    return !this.#ended && !this.#cancelled;
  }

  setHeader(): void {}

  json(): void {}

  beginStream(): void {}

  write(chunk: string | Buffer): boolean {
    // ResponsesReply writes whole frames (`event: ...\ndata: {...}\n\n`, JSON without raw newlines).
    for (const part of chunk.toString().split('\n\n')) if (part !== '') this.frames.push(`${part}\n\n`);
    this.#notify();
    return true;
  }

  onWritable(): void {}

  endStream(last?: string): void {
    if (last !== undefined) this.write(last);
  }

  onDrainDeadline(): void {}

  /** Called with the abort of the turn's request, once it exists. */
  onCancel(abort: () => void): void {
    this.#abort = abort;
  }

  cancel(): void {
    if (this.#cancelled || this.#ended) return;
    this.#cancelled = true;
    this.#abort();
    this.end();
  }

  end(): void {
    this.#ended = true;
    this.#notify();
  }

  /** `listener` runs after each new frame and at the end. */
  subscribe(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  #notify(): void {
    for (const listener of [...this.#listeners]) listener();
  }
}

/**
 * Writes a run's frames after `startingAfter` to a client as SSE, then the new ones as they come, under
 * uWS backpressure, until the run ends or the client leaves (the run goes on either way).
 */
export function followRun(run: BackgroundRun, req: IncomingRequest, reply: Reply, startingAfter: number): Promise<void> {
  reply.setHeader('Cache-Control', 'no-cache');
  reply.beginStream(200, 'text/event-stream');
  return new Promise<void>((resolve) => {
    let next = Math.max(0, startingAfter + 1);
    let waiting = false;
    let done = false;
    const stop = (): void => {
      if (done) return;
      done = true;
      unsubscribe();
      resolve();
    };
    const pump = (): void => {
      waiting = false;
      if (done) return;
      while (next < run.frames.length) {
        if (!reply.open) return stop();
        if (!reply.write(run.frames[next++] as string)) {
          waiting = true;
          reply.onWritable(pump);
          return;
        }
      }
      if (run.ended) {
        reply.endStream();
        stop();
      }
    };
    const unsubscribe = run.subscribe(() => {
      if (!waiting) pump();
    });
    req.onAbort(stop);
    // A graceful stop ends the follower's stream; the turn itself is failed "interrupted" at the next start.
    reply.onDrainDeadline(() => {
      reply.endStream();
      stop();
    });
    pump();
  });
}

export interface BackgroundJob {
  /** The creating request: its path, params and headers (augmentation flags) are the turn's. */
  readonly ctx: RouteContext;
  readonly id: string;
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
  /** The row goes `in_progress` as the turn starts; false: it was no longer queued (cancelled or deleted, through any replica). */
  readonly started: () => Promise<boolean>;
}

export interface BackgroundResponses {
  launch(job: BackgroundJob): BackgroundRun;
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

/** `instances`: when to look again for background responses that stopped instances left running (the store judges which owners are gone). */
export function createBackgroundResponses(services: ChatServices, repo: StoredResponses, logger: Logger, instances: RecoveryCue): BackgroundResponses {
  const running = new Map<string, BackgroundRun>();
  const kept = new Map<string, BackgroundRun>();
  // At start, and whenever a sibling instance is found dead: no turn of a stopped instance is still running
  // (each background turn runs at most once). A live sibling's turns are its own (issue 12).
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
  const stopRecovering = instances.onSweep(() => void recover());
  // Cancelled or deleted through another replica: the turn running here is aborted as a local cancel
  // would. A row that finished meanwhile is left to end by itself (its terminal events are being written).
  const abortCancelled = async (): Promise<void> => {
    for (const run of [...running.values()]) {
      if (!run.open) continue;
      const row = await repo.get(run.projectId, run.id);
      if (row === null || row.status === 'cancelled') run.cancel();
    }
  };
  const stopWatching = repo.watchCancels(() => {
    abortCancelled().catch((err: unknown) => logger.error({ err }, 'background responses: checking for cancels made through another replica failed'));
  });

  const keep = (run: BackgroundRun): void => {
    kept.set(run.id, run);
    for (const id of kept.keys()) {
      if (kept.size <= KEPT_STREAMS) break;
      kept.delete(id);
    }
  };

  async function execute(job: BackgroundJob, run: BackgroundRun, reply: ResponsesReply): Promise<void> {
    const raw = Buffer.from(JSON.stringify(job.chatBody));
    const headers: Record<string, string> = { ...job.ctx.req.headers };
    // The key was checked by the creating request; the body is a new one (its length is not the client's).
    delete headers.authorization;
    delete headers['content-length'];
    const synthetic = createSyntheticRequest({ method: 'POST', path: job.ctx.req.path, headers, body: raw, idPrefix: 'resp_', requestId: job.id });
    synthetic.req.params = job.ctx.req.params;
    run.onCancel(() => synthetic.abort());
    try {
      if (run.cancelled) return;
      // Cancelled or deleted before its turn began (here or through another replica): no turn runs.
      if (!(await job.started())) run.cancel();
      if (run.cancelled) return;
      const ctx: RouteContext = { req: synthetic.req, reply: synthetic.reply, route: job.ctx.route, draining: false };
      await serveChatTurn(services, { ctx, auth: job.auth, endpoint: job.endpoint, workspaceId: job.workspaceId, raw, parsed: job.chatBody, chat: job.chat, route: job.route, reply });
    } catch (err) {
      // What a foreground client would have got as an error answer becomes the Response's error.
      const e = toGatewayError(asResponsesRefusal(err, job.origin));
      if (!run.cancelled) reply.fail({ code: e.code, message: e.message });
    } finally {
      if (!run.cancelled && !reply.finished) reply.fail({ code: 'internal_error', message: 'The model turn ended without an answer.' });
      // The run's followers see its end once the outcome is stored (a retrieve then finds it).
      await reply.settled().catch((err: unknown) => logger.error({ err, response: run.id }, 'background response: storing its outcome failed'));
      run.end();
      running.delete(run.id);
      if (job.streamed) keep(run);
    }
  }

  return {
    launch(job) {
      const run = new BackgroundRun(job.id, job.auth.project.id, job.streamed);
      const reply = job.reply(run);
      if (job.streamed) reply.openEvents();
      running.set(run.id, run);
      // After the creating request is answered: the turn never delays the `queued` answer.
      setImmediate(() => {
        execute(job, run, reply).catch((err: unknown) => logger.error({ err, response: run.id }, 'background response failed'));
      });
      return run;
    },
    find(id) {
      const run = running.get(id) ?? kept.get(id);
      return run?.streamed ? run : undefined;
    },
    cancel(id) {
      const run = running.get(id);
      if (!run) return false;
      run.cancel();
      return true;
    },
    recovered,
    async close() {
      stopRecovering();
      stopWatching();
      await recovering;
      if (running.size === 0) return;
      const runs = [...running.values()];
      const stopped = await repo.failRunning(INTERRUPTED, 'mine').catch((err: unknown) => {
        logger.error({ err }, 'background responses: failing those still running at the stop failed; the next start does it');
        return 0;
      });
      for (const run of runs) run.cancel();
      logger.warn({ responses: stopped }, 'background responses still running at the stop were failed "interrupted"');
    },
  };
}
