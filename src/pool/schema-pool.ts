/**
 * Tool schemas off the event loop (issue 31): two dedicated schema threads (plain Workers running
 * schema-thread.ts), one for enrollments (compiling whole manifests) and one for invocations (validating
 * arguments, compiling a schema the first time it is used). An agent enrolling a large manifest therefore
 * delays neither the gateway's event loop nor another project's invocations; it waits behind other
 * enrollments only, which the enrollment rate limit bounds.
 *
 * Each lane runs one task at a time, in order, so a task's deadline counts from the moment the thread
 * starts it, not from when it was queued behind others. A task past its deadline has its thread
 * terminated: schema threads run only JavaScript (ajv, re2js), so, unlike the shared pool's threads
 * (worker-pool.ts: hnswlib's native calls), ending one mid-task is safe. The next task starts a new thread,
 * with an empty cache. Not piscina: it would add its per-task cost and has no per-task deadline that ends
 * the thread.
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

/** A task that did not finish within its deadline (its thread was ended). */
export class SchemaDeadlineError extends Error {
  override readonly name = 'SchemaDeadlineError';
}

export interface SchemaPool {
  /** The first of the schemas that cannot be used, and why; rejects with SchemaDeadlineError past the deadline. */
  checkSchemas(schemas: readonly Record<string, unknown>[]): Promise<SchemaCheckOutput>;
  /** Invocation arguments (core/exec/tool-arguments.ts); failures to check are GatewayErrors. */
  readonly validator: ArgumentsValidator;
  close(): Promise<void>;
}

interface Queued {
  readonly task: SchemaTask;
  resolve(value: unknown): void;
  reject(err: unknown): void;
}

class SchemaLane {
  readonly #deadlineMs: number;
  readonly #queue: Queued[] = [];
  #worker: Worker | null = null;
  #running: { readonly id: number; readonly item: Queued; readonly timer: NodeJS.Timeout } | null = null;
  #ids = 0;
  #closed = false;

  constructor(deadlineMs: number) {
    this.#deadlineMs = deadlineMs;
  }

  run<T>(task: SchemaTask): Promise<T> {
    if (this.#closed) return Promise.reject(new Error('the schema threads are closed'));
    return new Promise<T>((resolve, reject) => {
      this.#queue.push({ task, resolve: resolve as (value: unknown) => void, reject });
      this.#next();
    });
  }

  #thread(): Worker {
    if (this.#worker) return this.#worker;
    const w = new Worker(new URL('./schema-thread.js', import.meta.url));
    w.on('message', (reply: SchemaReply) => {
      const running = this.#running;
      if (!running || running.id !== reply.id) return;
      this.#finish();
      if (reply.ok) running.item.resolve(reply.value);
      else running.item.reject(new Error(reply.message));
    });
    w.on('error', (err) => this.#lost(w, err));
    w.on('exit', (code) => this.#lost(w, new Error(`the schema thread exited (${code})`)));
    this.#worker = w;
    return w;
  }

  #next(): void {
    if (this.#running || this.#closed) return;
    const item = this.#queue.shift();
    if (!item) {
      // Held only while a task runs: an idle thread does not keep the process alive.
      this.#worker?.unref();
      return;
    }
    const w = this.#thread();
    w.ref();
    this.#ids += 1;
    const id = this.#ids;
    const timer = setTimeout(() => this.#expire(), this.#deadlineMs);
    this.#running = { id, item, timer };
    w.postMessage({ id, task: item.task } satisfies SchemaRequest);
  }

  #finish(): void {
    if (this.#running) clearTimeout(this.#running.timer);
    this.#running = null;
    setImmediate(() => this.#next());
  }

  #expire(): void {
    const running = this.#running;
    const w = this.#worker;
    if (!running) return;
    this.#worker = null;
    this.#finish();
    running.item.reject(new SchemaDeadlineError(`did not finish within ${this.#deadlineMs} ms`));
    void w?.terminate();
  }

  /** The thread died (it should not): the task it ran fails; the next task starts a new thread. */
  #lost(w: Worker, err: Error): void {
    if (this.#worker !== w) return;
    this.#worker = null;
    const running = this.#running;
    if (!running) return;
    this.#finish();
    running.item.reject(err);
  }

  async close(): Promise<void> {
    this.#closed = true;
    const err = new Error('the schema threads are closed');
    for (const item of this.#queue.splice(0)) item.reject(err);
    const running = this.#running;
    if (running) {
      clearTimeout(running.timer);
      this.#running = null;
      running.item.reject(err);
    }
    const w = this.#worker;
    this.#worker = null;
    if (w) await w.terminate();
  }
}

export function createSchemaPool(options: { checkDeadlineMs?: number; validateDeadlineMs?: number } = {}): SchemaPool {
  const enrollments = new SchemaLane(options.checkDeadlineMs ?? CHECK_DEADLINE_MS);
  const invocations = new SchemaLane(options.validateDeadlineMs ?? VALIDATE_DEADLINE_MS);
  // By schema object: a tool's schema lives as long as its agent's enrollment; its key is hashed once.
  const keys = new WeakMap<object, string>();
  const keyOf = (schema: Record<string, unknown>): string => {
    let key = keys.get(schema);
    if (key === undefined) keys.set(schema, (key = schemaKey(schema)));
    return key;
  };

  return {
    checkSchemas: (schemas) => enrollments.run<SchemaCheckOutput>({ op: 'check', schemas }),
    validator: {
      async validate(schema, args) {
        try {
          return await invocations.run<ArgumentsVerdict>({ op: 'validate', key: keyOf(schema), schema, args });
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
