/**
 * `npm start` (src/demo.ts) as a newcomer runs it: the gateway on 127.0.0.1:8080 over the simulator on
 * 127.0.0.1:9100, both fixed by data/demo.yaml. Ctrl-C drains the gateway before the simulator stops (a
 * stream in flight finishes instead of failing mid-stream), and a start that fails leaves no simulator
 * behind (issue 32 item 5).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer, connect, type Server } from 'node:net';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { trackChild } from '../helpers/child-registry.js';

const DEMO = join(process.cwd(), 'dist/src/demo.js');
const DEMO_KEY = 'svc_test_demo0000000000000000000000000000000000';

interface Demo {
  readonly child: ChildProcess;
  readonly exited: Promise<number | null>;
  output(): string;
}

let running: Demo | null = null;

afterEach(async () => {
  if (running && running.child.exitCode === null) {
    running.child.kill('SIGKILL');
    await running.exited;
  }
  running = null;
});

function startDemo(): Demo {
  const child = trackChild(spawn(process.execPath, [DEMO], { stdio: ['ignore', 'pipe', 'pipe'] }));
  let out = '';
  child.stdout?.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  running = { child, exited, output: () => out };
  return running;
}

async function untilOutput(demo: Demo, text: string): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (!demo.output().includes(text)) {
    if (demo.child.exitCode !== null || Date.now() > deadline) throw new Error(`no "${text}" from npm start:\n${demo.output()}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Whether something accepts connections on 127.0.0.1:port right now. */
function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

describe('npm start', () => {
  it('drains a stream in flight at Ctrl-C before stopping the simulator, then exits 0 leaving nothing listening', async () => {
    const demo = startDemo();
    await untilOutput(demo, 'Switchboard is running on');
    const key = /demo API key: +(\S+)/.exec(demo.output())?.[1] ?? DEMO_KEY;
    const res = await fetch('http://127.0.0.1:8080/proj_demo/chat/v1/chat/completions', {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'x-sim-delay-ms': '150', 'x-sim-tokens': '6' },
      body: JSON.stringify({ model: 'demo-chat', stream: true, messages: [{ role: 'user', content: 'hello' }] }),
    });
    expect(res.status).toBe(200);
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    const first = await reader.read();
    expect(first.done).toBe(false);
    // The stream is in flight: its next tokens are 150 ms apart.
    demo.child.kill('SIGINT');
    let text = new TextDecoder().decode(first.value);
    for (;;) {
      const next = await reader.read();
      if (next.done) break;
      text += new TextDecoder().decode(next.value);
    }
    expect(text).not.toContain('"error"');
    expect(text.trimEnd().endsWith('data: [DONE]')).toBe(true);
    expect(await demo.exited, demo.output()).toBe(0);
    expect(await listening(9100)).toBe(false);
    expect(await listening(8080)).toBe(false);
  });

  it('exits 1 when port 8080 is taken and leaves no simulator running on 9100', async () => {
    const blocker: Server = createServer((socket) => socket.resume());
    await new Promise<void>((resolve) => blocker.listen(8080, '127.0.0.1', resolve));
    try {
      const demo = startDemo();
      expect(await demo.exited, demo.output()).toBe(1);
      expect(demo.output()).toContain('switchboard demo:');
      expect(await listening(9100)).toBe(false);
    } finally {
      await new Promise((resolve) => blocker.close(resolve));
    }
  });

  it('exits 1 when port 9100 is taken instead of serving over whatever answers there', async () => {
    const blocker: Server = createServer((socket) => socket.resume());
    await new Promise<void>((resolve) => blocker.listen(9100, '127.0.0.1', resolve));
    try {
      const demo = startDemo();
      expect(await demo.exited, demo.output()).toBe(1);
      expect(demo.output()).toContain('the simulator exited');
      expect(await listening(8080)).toBe(false);
    } finally {
      await new Promise((resolve) => blocker.close(resolve));
    }
  });
});
