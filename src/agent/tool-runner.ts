/**
 * Runs one invocation of a reference-agent tool: its argv filled from the arguments and spawned WITHOUT
 * a shell, stdout and stderr streamed as text (decoded per stream, so a character split across chunks is
 * not garbled) up to the tool's `output_cap_bytes`, then dropped. The child leads a process group of its
 * own, so a timeout or a cancel stops what it started too: SIGTERM to the group, SIGKILL two seconds later.
 * Exit codes follow the shell's conventions: 128 + n when killed by signal n, 127 when the program cannot
 * be started, 2 when the arguments do not fill the template. Commands inherit the agent's environment
 * minus its own keys (SWITCHBOARD_JOIN_KEY, SWITCHBOARD_AGENT_KEY): a tool must not be able to print them.
 */
import { spawn } from 'node:child_process';
import { constants } from 'node:os';
import { StringDecoder } from 'node:string_decoder';
import type { AgentTool } from './agent-manifest.js';
import { fillArgv, TemplateError } from './argv-template.js';

export interface RunOutcome {
  readonly exitCode: number;
  readonly error: string | null;
  /** Output past the tool's `output_cap_bytes` was dropped (the result says so: output_truncated). */
  readonly outputTruncated: boolean;
}

export interface RunHandlers {
  output(data: string): void;
  done(outcome: RunOutcome): void;
}

export interface RunningTool {
  /** Stops the child (and its group); `done` still follows. */
  kill(reason: string): void;
}

const KILL_GRACE_MS = 2000;
const AGENT_SECRETS = ['SWITCHBOARD_JOIN_KEY', 'SWITCHBOARD_AGENT_KEY'];

function commandEnv(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  for (const name of AGENT_SECRETS) delete env[name];
  return env;
}

export function runTool(tool: AgentTool, args: Record<string, unknown>, timeoutMs: number, handlers: RunHandlers): RunningTool {
  let argv: string[];
  try {
    argv = fillArgv(tool.command, args);
  } catch (err) {
    if (!(err instanceof TemplateError)) throw err;
    queueMicrotask(() => handlers.done({ exitCode: 2, error: err.message, outputTruncated: false }));
    return { kill: () => undefined };
  }
  const [program = '', ...rest] = argv;
  const start = () => spawn(program, rest, { shell: false, detached: true, stdio: ['ignore', 'pipe', 'pipe'], env: commandEnv() });
  let child: ReturnType<typeof start>;
  try {
    child = start();
  } catch (err) {
    // Some refusals are thrown, not emitted as 'error' (a NUL byte in an argument, E2BIG for an argv past the
    // kernel's limit): the arguments are the caller's, so uncaught they would take the whole agent down.
    queueMicrotask(() => handlers.done({ exitCode: 127, error: `cannot run ${program}: ${(err as Error).message}`, outputTruncated: false }));
    return { kill: () => undefined };
  }
  let budget = tool.outputCapBytes;
  let dropped = false;
  let stopReason: string | null = null;
  let finished = false;
  let killTimer: NodeJS.Timeout | null = null;

  const forward = (decoder: StringDecoder) => (chunk: Buffer) => {
    if (chunk.length > budget) dropped = true;
    if (budget <= 0) return;
    const kept = chunk.length > budget ? chunk.subarray(0, budget) : chunk;
    budget -= kept.length;
    const text = decoder.write(kept);
    if (text) handlers.output(text);
  };
  child.stdout.on('data', forward(new StringDecoder('utf8')));
  child.stderr.on('data', forward(new StringDecoder('utf8')));

  const signalGroup = (signal: NodeJS.Signals): void => {
    try {
      if (child.pid !== undefined) process.kill(-child.pid, signal);
    } catch {
      // The group is gone already.
    }
  };
  const kill = (reason: string): void => {
    if (finished || stopReason !== null) return;
    stopReason = reason;
    signalGroup('SIGTERM');
    killTimer = setTimeout(() => signalGroup('SIGKILL'), KILL_GRACE_MS);
    killTimer.unref();
  };
  const timer = setTimeout(() => kill(`timed out after ${timeoutMs} ms`), timeoutMs);
  timer.unref();

  const finish = (outcome: Omit<RunOutcome, 'outputTruncated'>): void => {
    if (finished) return;
    finished = true;
    clearTimeout(timer);
    if (killTimer) clearTimeout(killTimer);
    handlers.done({ ...outcome, outputTruncated: dropped });
  };
  child.on('error', (err) => finish({ exitCode: 127, error: `cannot run ${program}: ${err.message}` }));
  child.on('close', (code, signal) => {
    const exitCode = code ?? 128 + (signal ? (constants.signals[signal] ?? 0) : 0);
    const error = stopReason ?? (signal ? `killed by ${signal}` : null);
    finish({ exitCode, error });
  });
  return { kill };
}
