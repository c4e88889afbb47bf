/**
 * `npm start`: the bundled simulator (its own process, a real upstream on 127.0.0.1:9100) and the gateway
 * on data/demo.yaml, then ready-to-paste lines. Ctrl-C drains the gateway, then stops the simulator.
 *
 * `npm start -- --tls` serves the same over HTTPS/WSS with a self-signed certificate made by openssl into
 * data/demo-tls/ when absent (that folder ignores itself for git). The openai SDK's realtime client
 * (`OpenAIRealtimeWS`) always dials wss://, so it needs this; Node trusts the certificate through
 * NODE_EXTRA_CA_CERTS (docs/realtime.md, "TLS").
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse as parseYaml } from 'yaml';
import { parseConfig, type Config } from './config.js';
import { banner, CONFIG, SIMULATOR_PORT } from './demo-banner.js';
import { startGateway, type RunningGateway } from './main.js';

const TLS_DIR = 'data/demo-tls';
const USAGE = 'usage: npm start [-- --tls]';

/**
 * Until the simulator we started answers. Its own exit fails the start at once: on a taken port it exits,
 * and a health check would otherwise be answered by whatever holds the port (a simulator left by an
 * earlier start), so a second demo would run beside the first.
 */
async function waitForSimulator(url: string, simulator: ChildProcess, deadline: number): Promise<void> {
  let exited: number | string | null = null;
  const onExit = (code: number | null, signal: NodeJS.Signals | null): void => {
    exited = code ?? signal ?? 'unknown';
  };
  simulator.once('exit', onExit);
  try {
    while (Date.now() < deadline) {
      if (exited !== null) throw new Error(`the simulator exited (${exited}) before it answered: is port ${SIMULATOR_PORT} taken?`);
      try {
        if ((await fetch(url, { signal: AbortSignal.timeout(1000) })).ok && exited === null) return;
      } catch {
        // not listening yet
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(`the simulator did not answer on ${url} (is port ${SIMULATOR_PORT} taken?)`);
  } finally {
    simulator.off('exit', onExit);
  }
}

/** Stops the simulator and resolves once it has exited (at most 5 s, then SIGKILL). */
function stopSimulator(simulator: ChildProcess): Promise<void> {
  if (simulator.exitCode !== null || simulator.signalCode !== null) return Promise.resolve();
  return new Promise((done) => {
    const kill = setTimeout(() => simulator.kill('SIGKILL'), 5000);
    simulator.once('exit', () => {
      clearTimeout(kill);
      done();
    });
    simulator.kill('SIGTERM');
  });
}

/** data/demo-tls/{cert,key}.pem, made once; valid for 127.0.0.1 and localhost (clients check the SAN). */
function demoCertificate(): { cert: string; key: string } {
  const cert = resolve(TLS_DIR, 'cert.pem');
  const key = resolve(TLS_DIR, 'key.pem');
  if (existsSync(cert) && existsSync(key)) return { cert, key };
  mkdirSync(TLS_DIR, { recursive: true });
  // Generated, never committed: the folder ignores itself (and a private key must not end up in git).
  writeFileSync(join(TLS_DIR, '.gitignore'), '*\n');
  const args = ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', key, '-out', cert, '-days', '365', '-subj', '/CN=localhost', '-addext', 'subjectAltName=IP:127.0.0.1,DNS:localhost'];
  try {
    execFileSync('openssl', args, { stdio: ['ignore', 'ignore', 'pipe'] });
  } catch (err) {
    throw new Error(`could not make the demo certificate with openssl (${(err as Error).message.split('\n')[0]}); install openssl, or put your own cert.pem and key.pem in ${TLS_DIR}/`);
  }
  return { cert, key };
}

/**
 * data/demo.yaml, plus server.tls when asked. Everything else is in the file itself, so the CLI's
 * `--config data/demo.yaml` (keys, users) syncs the same endpoints the demo serves.
 */
function demoConfig(tls: { cert: string; key: string } | null): Config {
  const raw = parseYaml(readFileSync(CONFIG, 'utf8')) as { server?: Record<string, unknown> };
  if (tls) raw.server = { ...raw.server, tls: { cert_file: tls.cert, key_file: tls.key } };
  return parseConfig(raw, CONFIG, dirname(resolve(CONFIG)));
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const unknown = args.filter((a) => a !== '--tls');
  if (unknown.length > 0) throw new Error(`unknown argument ${unknown[0]}; ${USAGE}`);
  const tls = args.includes('--tls') ? demoCertificate() : null;
  const config = demoConfig(tls);

  const cli = fileURLToPath(new URL('./cli.js', import.meta.url));
  const simulator = spawn(process.execPath, [cli, 'simulate', '--port', String(SIMULATOR_PORT)], { stdio: ['ignore', 'ignore', 'inherit'] });
  // The gateway drains first (a stream in flight finishes against a live simulator), then the simulator
  // stops; a start that fails stops the simulator before exiting, so nothing is left on its port.
  const starting = (async (): Promise<RunningGateway> => {
    await waitForSimulator(`http://127.0.0.1:${SIMULATOR_PORT}/healthz`, simulator, Date.now() + 10_000);
    return startGateway({ config });
  })();
  let stopping = false;
  const stop = (code: number): void => {
    if (stopping) return;
    stopping = true;
    void starting
      .then((gateway) => gateway.close().then(() => code, () => 1), () => code)
      .then((status) => stopSimulator(simulator).then(() => process.exit(status)));
  };
  process.on('SIGINT', () => stop(0));
  process.on('SIGTERM', () => stop(0));
  simulator.on('exit', (code) => {
    if (code !== null && code !== 0 && !stopping) process.stderr.write(`simulator exited with code ${code}\n`);
  });
  let gateway: RunningGateway;
  try {
    gateway = await starting;
  } catch (err) {
    process.stderr.write(`switchboard demo: ${(err as Error).message}\n`);
    stop(1);
    return;
  }
  if (!stopping) process.stdout.write(banner(config, gateway.url, tls));
}

main().catch((err: unknown) => {
  process.stderr.write(`switchboard demo: ${(err as Error).message}\n`);
  process.exit(1);
});
