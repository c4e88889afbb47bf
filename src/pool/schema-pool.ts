/**
 * Tool schemas off the event loop (issue 31): two lanes of schema threads (plain Workers running
 * schema-thread.ts), one for enrollments (compiling whole manifests, up to 2 threads) and one for
 * invocations (validating arguments, compiling a schema the first time a thread uses it, up to 3). An
 * agent enrolling a large manifest therefore never delays the gateway's event loop.
 *
 * Each lane is fair between tenants (projects): every task names its tenant, each tenant's tasks wait in
 * a queue of their own, in order, and a free thread takes the next tenant's in turn (round-robin). A
 * tenant runs at most one task at a time, so one project holds at most one thread of a lane: its slow
 * manifests or arguments delay its own next tasks only, and another project's task starts at once on
 * another thread. It waits for a thread only while at least as many other projects as the lane has
 * threads run tasks at once, and then for its turn: at most ceil(P / threads) deadlines behind P other
 * projects with work queued, however many tasks each has queued (a single queue in arrival order, as
 * before, made one project's 6 slow invocations delay another's trivial one by 11.6 s).
 *
 * A thread runs one task at a time, so a task's deadline counts from the moment the thread starts it,
 * not from when it was queued. A task past its deadline has its thread terminated: schema threads run
 * only JavaScript (ajv, re2js), so, unlike the shared pool's threads (worker-pool.ts: hnswlib's native
 * calls), ending one mid-task is safe. A new thread replaces it when work needs one, with an empty cache.
 * Threads start on demand and are kept while idle (without holding the process), each with its own cache
 * of compiled validators. Not piscina: it would add its per-task cost, has no per-task deadline that ends
 * the thread, and no notion of whose task it runs.
 */
import { Worker } from 'node:worker_threads';
import type { ArgumentsValidator } from '../core/exec/tool-arguments.js';
import { schemaKey, type ArgumentsVerdict } from '../core/exec/schema-compiler.js';
import { GatewayError } from '../errors.js';
import type { SchemaCheckOutput, SchemaReply, SchemaRequest, SchemaTask } from './tasks.js';

/** Compiling the largest manifest the bounds allow takes about a second on a busy core. */
export const CHECK_DEADLINE_MS = 10_000;
/** Arguments are matched in linear time: a deadline passed here is a thread that hangs. */
export const VALIDATE_DEADLINE_MS = 2_000;
/** Enrollments are rate-limited per key and per project: one project's slow manifests leave a thread to the others. */
export const CHECK_THREADS = 2;
/** Invocations come far more often, unmetered here: two projects' slow arguments at once still leave a thread to the rest. */
export const VALIDATE_THREADS = 3;

/** A task that did not finish within its deadline (its thread was ended). */
export class SchemaDeadlineError extends Error {
  override readonly name = 'SchemaDeadlineError';
}

export interface SchemaPool {
  /**
   * The first of the schemas that cannot be used, and why; rejects with SchemaDeadlineError past the
   * deadline. `tenant` (the project id) takes its turn against other tenants' enrollments.
   */
  checkSchemas(schemas: readonly Record<string, unknown>[], tenant: string): Promise<SchemaCheckOutput>;
  /** Invocation arguments (core/exec/tool-arguments.ts); failures to check are GatewayErrors. */
  readonly validator: ArgumentsValidator;
  close(): Promise<void>;
}

export interface SchemaPoolOptions {
  readonly checkDeadlineMs?: number;
  readonly validateDeadlineMs?: number;
  /** Threads of the enrollments lane (CHECK_THREADS). */
  readonly checkThreads?: number;
  /** Threads of the invocations lane (VALIDATE_THREADS). */
  readonly validateThreads?: number;
}

interface Queued {
  readonly tenant: string;
  readonly task: SchemaTask;
  resolve(value: unknown): void;
  reject(err: unknown): void;
}

interface Thread {
  readonly worker: Worker;
  running: { readonly id: number; readonly item: Queued; readonly timer: NodeJS.Timeout } | null;
}

class SchemaLane {
  readonly #deadlineMs: number;
  readonly #maxThreads: number;
  /**
   * Tenants with tasks waiting, in the order they are served: a tenant served goes behind the others
   * (re-inserted at the end of the Map), so each gets a turn whatever the length of another's queue.
   * No tenant is kept with an empty queue.
   */
  readonly #queues = new Map<string, Queued[]>();
  /** Threads alive; a thread terminated (deadline) or lost leaves it at once. */
  readonly #threads = new Set<Thread>();
  /** Tenants with a task running: one each, so that a tenant never holds more than one thread. */
  readonly #running = new Set<string>();
  #ids = 0;
  #closed = false;

  constructor(deadlineMs: number, maxThreads: number) {
    this.#deadlineMs = deadlineMs;
    this.#maxThreads = maxThreads;
  }

  run<T>(tenant: string, task: SchemaTask): Promise<T> {
    if (this.#closed) return Promise.reject(new Error('the schema threads are closed'));
    return new Promise<T>((resolve, reject) => {
      const item: Queued = { tenant, task, resolve: resolve as (value: unknown) => void, reject };
      const queue = this.#queues.get(tenant);
      if (queue) queue.push(item);
      else this.#queues.set(tenant, [item]);
      this.#next();
    });
  }

  /** Starts waiting tasks while a thread is free (or may be started) and some tenant with tasks waiting runs none. */
  #next(): void {
    while (!this.#closed) {
      const idle = this.#idle();
      if (!idle && this.#threads.size >= this.#maxThreads) return;
      const item = this.#take();
      if (!item) return;
      this.#start(idle ?? this.#spawn(), item);
    }
  }

  #idle(): Thread | null {
    for (const thread of this.#threads) if (!thread.running) return thread;
    return null;
  }

  /** The next tenant's oldest task, in turn; tenants running a task wait where they are. */
  #take(): Queued | null {
    for (const [tenant, queue] of this.#queues) {
      if (this.#running.has(tenant)) continue;
      const item = queue.shift();
      this.#queues.delete(tenant);
      if (queue.length > 0) this.#queues.set(tenant, queue);
      if (item) return item;
    }
    return null;
  }

  #spawn(): Thread {
    const thread: Thread = { worker: new Worker(new URL('./schema-thread.js', import.meta.url)), running: null };
    thread.worker.on('message', (reply: SchemaReply) => {
      const running = thread.running;
      if (!running || running.id !== reply.id) return;
      this.#finish(thread);
      if (reply.ok) running.item.resolve(reply.value);
      else running.item.reject(new Error(reply.message));
    });
    thread.worker.on('error', (err) => this.#lost(thread, err));
    thread.worker.on('exit', (code) => this.#lost(thread, new Error(`the schema thread exited (${code})`)));
    this.#threads.add(thread);
    return thread;
  }

  #start(thread: Thread, item: Queued): void {
    thread.worker.ref();
    this.#ids += 1;
    const id = this.#ids;
    const timer = setTimeout(() => this.#expire(thread), this.#deadlineMs);
    thread.running = { id, item, timer };
    this.#running.add(item.tenant);
    thread.worker.postMessage({ id, task: item.task } satisfies SchemaRequest);
  }

  #finish(thread: Thread): void {
    const running = thread.running;
    if (!running) return;
    clearTimeout(running.timer);
    thread.running = null;
    this.#running.delete(running.item.tenant);
    // Held only while a task runs: an idle thread does not keep the process alive.
    thread.worker.unref();
    setImmediate(() => this.#next());
  }

  #expire(thread: Thread): void {
    const running = thread.running;
    if (!running) return;
    this.#threads.delete(thread);
    this.#finish(thread);
    running.item.reject(new SchemaDeadlineError(`did not finish within ${this.#deadlineMs} ms`));
    void thread.worker.terminate();
  }

  /** The thread died (it should not): the task it ran fails; a new thread is started when work needs one. */
  #lost(thread: Thread, err: Error): void {
    if (!this.#threads.delete(thread)) return;
    const running = thread.running;
    if (!running) return;
    this.#finish(thread);
    running.item.reject(err);
  }

  async close(): Promise<void> {
    this.#closed = true;
    const err = new Error('the schema threads are closed');
    for (const queue of this.#queues.values()) for (const item of queue) item.reject(err);
    this.#queues.clear();
    const threads = [...this.#threads];
    this.#threads.clear();
    this.#running.clear();
    for (const thread of threads) {
      const running = thread.running;
      if (!running) continue;
      clearTimeout(running.timer);
      thread.running = null;
      running.item.reject(err);
    }
    await Promise.all(threads.map((thread) => thread.worker.terminate()));
  }
}

export function createSchemaPool(options: SchemaPoolOptions = {}): SchemaPool {
  const enrollments = new SchemaLane(options.checkDeadlineMs ?? CHECK_DEADLINE_MS, options.checkThreads ?? CHECK_THREADS);
  const invocations = new SchemaLane(options.validateDeadlineMs ?? VALIDATE_DEADLINE_MS, options.validateThreads ?? VALIDATE_THREADS);
  // By schema object: a tool's schema lives as long as its agent's enrollment; its key is hashed once.
  const keys = new WeakMap<object, string>();
  const keyOf = (schema: Record<string, unknown>): string => {
    let key = keys.get(schema);
    if (key === undefined) keys.set(schema, (key = schemaKey(schema)));
    return key;
  };

  return {
    checkSchemas: (schemas, tenant) => enrollments.run<SchemaCheckOutput>(tenant, { op: 'check', schemas }),
    validator: {
      async validate(schema, args, tenant) {
        try {
          return await invocations.run<ArgumentsVerdict>(tenant, { op: 'validate', key: keyOf(schema), schema, args });
        } catch (err) {
          if (err instanceof SchemaDeadlineError) {
            throw new GatewayError('invalid_body', { param: 'arguments', message: `Checking arguments against the input_schema ${err.message}; send smaller arguments.` });
          }
          throw new GatewayError('unavailable', { message: `Arguments could not be checked: ${(err as Error).message}; retry.` });
        }
      },
    },
    close: async () => {
      await Promise.all([enrollments.close(), invocations.close()]);
    },
  };
}
