import { startSimulator } from './server.js';

// Standalone entry for benchmarks and manual poking:
//   node dist/src/simulator/main.js [--host 127.0.0.1] [--port 8001] [--reasoning-models a,b]
// Env SIM_HOST / SIM_PORT / SIM_REASONING_MODELS work too (flags win).

function flag(name: string): string | undefined {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

const host = flag('host') ?? process.env['SIM_HOST'] ?? '127.0.0.1';
const port = Number(flag('port') ?? process.env['SIM_PORT'] ?? 8001);
const reasoningModels = (flag('reasoning-models') ?? process.env['SIM_REASONING_MODELS'] ?? '')
  .split(',')
  .map((s) => s.trim())
  .filter((s) => s.length > 0);

const sim = await startSimulator({ host, port, reasoningModels });
// One line on stdout so a parent process can wait for readiness and learn the port.
process.stdout.write(`simulator listening on ${sim.url}\n`);

const shutdown = (): void => {
  void sim.close().then(() => process.exit(0));
};
process.on('SIGINT', shutdown);
process.on('SIGTERM', shutdown);
