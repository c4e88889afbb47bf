/**
 * Request and answer between the worker threads of `serve --workers N` (issue 32 "one deployment, one
 * truth"): one worker asks another (an MCP session's owner) or all the others (their metrics), over a
 * BroadcastChannel of the launch, and waits at most a deadline. A worker that does not answer in time
 * (busy, dying, being replaced, or no such worker) is counted as missing, never waited for longer: a
 * scrape or a request never hangs on a sibling.
 *
 * Messages are structured clones between threads of one process (one build), so they are not
 * JSON-enveloped as the bus is; anything that is not a well-formed request or answer is ignored.
 */
import { BroadcastChannel } from 'node:worker_threads';

export const workerRpcChannelName = (busChannel: string): string => `${busChannel}:rpc`;

/** What a worker answers for a request it handles; a thrown error or rejection is not answered. */
export type RpcHandler = (payload: unknown) => unknown;

export type RpcAnswer = { readonly answered: true; readonly value: unknown } | { readonly answered: false };

export interface WorkerRpc {
  /** This worker's index (0..workers-1). */
  readonly self: number;
  readonly workers: number;
  /** Registers what this worker answers to `method` (one handler per method). */
  handle(method: string, handler: RpcHandler): void;
  /** Asks one worker. */
  call(to: number, method: string, payload: unknown, timeoutMs: number): Promise<RpcAnswer>;
  /** Asks every other worker: the answers that came within `timeoutMs`, and how many did not answer. */
  gather(method: string, payload: unknown, timeoutMs: number): Promise<{ answers: unknown[]; missing: number }>;
  close(): void;
}

interface RequestMessage {
  readonly rpc: 'request';
  readonly id: string;
  readonly from: number;
  /** -1: every other worker. */
  readonly to: number;
  readonly method: string;
  readonly payload: unknown;
}

interface AnswerMessage {
  readonly rpc: 'answer';
  readonly id: string;
  readonly to: number;
  readonly value: unknown;
}

interface Pending {
  readonly answers: unknown[];
  readonly expected: number;
  readonly done: () => void;
}

const isRequest = (m: unknown): m is RequestMessage =>
  typeof m === 'object' && m !== null && (m as RequestMessage).rpc === 'request' && typeof (m as RequestMessage).id === 'string' && typeof (m as RequestMessage).method === 'string';
const isAnswer = (m: unknown): m is AnswerMessage => typeof m === 'object' && m !== null && (m as AnswerMessage).rpc === 'answer' && typeof (m as AnswerMessage).id === 'string';

export function createWorkerRpc(channelName: string, self: number, workers: number): WorkerRpc {
  const channel = new BroadcastChannel(channelName);
  // An idle channel must not keep a drained worker's thread alive (as the bus's: broadcast-bus.ts).
  channel.unref();
  const handlers = new Map<string, RpcHandler>();
  const pending = new Map<string, Pending>();
  let next = 0;
  let closed = false;
  const post = (message: RequestMessage | AnswerMessage): void => {
    if (!closed) channel.postMessage(message);
  };

  const answer = (request: RequestMessage): void => {
    const handler = handlers.get(request.method);
    if (handler === undefined) return;
    Promise.resolve()
      .then(() => handler(request.payload))
      .then(
        (value) => post({ rpc: 'answer', id: request.id, to: request.from, value }),
        // Not answered: the asker counts this worker as missing, as it would a dead one.
        () => undefined,
      );
  };

  channel.onmessage = (event: unknown) => {
    const data = (event as { data?: unknown }).data;
    if (isRequest(data)) {
      if (data.from !== self && (data.to === self || data.to === -1)) answer(data);
      return;
    }
    if (!isAnswer(data) || data.to !== self) return;
    const waiting = pending.get(data.id);
    if (waiting === undefined) return;
    waiting.answers.push(data.value);
    if (waiting.answers.length >= waiting.expected) waiting.done();
  };

  const ask = (to: number, method: string, payload: unknown, expected: number, timeoutMs: number): Promise<unknown[]> => {
    if (closed || expected <= 0) return Promise.resolve([]);
    const id = `${self}:${next++}`;
    return new Promise((resolve) => {
      const answers: unknown[] = [];
      const done = (): void => {
        clearTimeout(timer);
        pending.delete(id);
        resolve(answers);
      };
      const timer = setTimeout(done, timeoutMs);
      pending.set(id, { answers, expected, done });
      post({ rpc: 'request', id, from: self, to, method, payload });
    });
  };

  return {
    self,
    workers,
    handle(method, handler) {
      handlers.set(method, handler);
    },
    async call(to, method, payload, timeoutMs) {
      if (to === self || to < 0 || to >= workers) return { answered: false };
      const answers = await ask(to, method, payload, 1, timeoutMs);
      return answers.length > 0 ? { answered: true, value: answers[0] } : { answered: false };
    },
    async gather(method, payload, timeoutMs) {
      const answers = await ask(-1, method, payload, workers - 1, timeoutMs);
      return { answers, missing: workers - 1 - answers.length };
    },
    close() {
      if (closed) return;
      closed = true;
      for (const waiting of [...pending.values()]) waiting.done();
      handlers.clear();
      channel.close();
    },
  };
}
