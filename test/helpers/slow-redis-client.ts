/**
 * A stand-in for the ioredis connection RedisAdmission uses, whose every reply comes a chosen round trip
 * after its command, on the test's (fake) timers: deterministic where a delaying TCP proxy
 * (test/contract/redis-proxy.ts) is at the mercy of a busy machine. It keeps ioredis's behaviour where it
 * matters to the limiter: a command unanswered after `timeoutMs` is rejected with `Command timed out` but
 * still runs in Redis when its reply comes, the reply's bytes arrive on `stream` ('data') whether the
 * command was still waited for or not, and replies come in the order the commands were sent.
 *
 * The sliding-window script is modelled by its counts within one window (no expiry): enough for tests
 * whose clock does not leave the minute.
 */
import { EventEmitter } from 'node:events';

type Args = readonly (string | number)[];

export class SlowRedisClient extends EventEmitter {
  status = 'ready';
  readonly stream = new EventEmitter();
  /** Each command's round trip from now on, in ms; null: Redis answers nothing (held until `release`). */
  roundTripMs: number | null = 0;
  /** Requests each request counter holds, and tokens each token counter holds, as Redis has applied them. */
  readonly counts = new Map<string, number>();
  readonly #timeoutMs: number;
  #lastDue = 0;
  readonly #held: (() => void)[] = [];

  constructor(timeoutMs: number) {
    super();
    this.#timeoutMs = timeoutMs;
  }

  evalsha(_sha: string, numKeys: number, ...rest: Args): Promise<unknown> {
    return this.#command(() => this.#script(rest.slice(0, numKeys).map(String), rest.slice(numKeys)));
  }

  eval(_script: string, numKeys: number, ...rest: Args): Promise<unknown> {
    return this.evalsha('', numKeys, ...rest);
  }

  ping(): Promise<string> {
    return this.#command(() => 'PONG');
  }

  script(): Promise<string> {
    return this.#command(() => 'sha');
  }

  /** A hung Redis comes back: what it held is answered now (late), and later commands take `roundTripMs`. */
  release(roundTripMs: number): void {
    this.roundTripMs = roundTripMs;
    for (const answer of this.#held.splice(0)) answer();
  }

  /** The connection drops, as ioredis reports it. */
  drop(): void {
    this.status = 'reconnecting';
    this.emit('close');
  }

  #command<T>(apply: () => T): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      let settled = false;
      const timer = setTimeout(() => {
        if (settled) return;
        settled = true;
        reject(new Error('Command timed out'));
      }, this.#timeoutMs);
      const answer = (): void => {
        const value = apply();
        this.stream.emit('data', Buffer.from('+reply\r\n'));
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve(value);
      };
      if (this.roundTripMs === null) {
        this.#held.push(answer);
        return;
      }
      // One TCP stream: a reply never overtakes the reply of a command sent before it.
      const due = Math.max(Date.now() + this.roundTripMs, this.#lastDue);
      this.#lastDue = due;
      setTimeout(answer, due - Date.now());
    });
  }

  /** sliding-window-script.ts's `admit` and `charge`, reduced to counts: [code, used, wait, quota used, quota wait]. */
  #script(keys: readonly string[], args: Args): unknown {
    const count = (k: string): number => this.counts.get(k) ?? 0;
    if (args[0] === 'charge') {
      const tokens = keys[0] as string;
      this.counts.set(tokens, count(tokens) + Number(args[4]));
      return [0, 0, 0, 0, 0];
    }
    const [requests, , tokens] = keys as [string, string, string];
    const [projectLimit, , , , tokenLimit, , carried] = args.slice(4).map(Number) as number[];
    this.counts.set(tokens, count(tokens) + (carried ?? 0));
    const used = count(requests);
    if ((projectLimit ?? 0) > 0 && used >= (projectLimit ?? 0)) return [1, used, 60_000, 0, 0];
    if ((tokenLimit ?? 0) > 0 && count(tokens) >= (tokenLimit ?? 0)) return [2, used, 60_000, 0, 0];
    this.counts.set(requests, used + 1);
    return [0, used, 60_000, 0, 0];
  }
}
