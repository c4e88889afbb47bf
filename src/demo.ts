/**
 * `npm start`: the bundled simulator (its own process, a real upstream on 127.0.0.1:9100) and the gateway
 * on data/demo.yaml, then a ready-to-paste curl line. Ctrl-C stops both.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { loadConfigFile } from './config.js';
import { startGateway } from './main.js';

const CONFIG = 'data/demo.yaml';
const SIMULATOR_PORT = 9100;

async function waitForSimulator(url: string, deadline: number): Promise<void> {
  while (Date.now() < deadline) {
    try {
      if ((await fetch(url)).ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`the simulator did not answer on ${url} (is port ${SIMULATOR_PORT} taken?)`);
}

async function main(): Promise<void> {
  const cli = fileURLToPath(new URL('./cli.js', import.meta.url));
  const simulator = spawn(process.execPath, [cli, 'simulate', '--port', String(SIMULATOR_PORT)], { stdio: ['ignore', 'ignore', 'inherit'] });
  simulator.on('exit', (code) => {
    if (code !== null && code !== 0) process.stderr.write(`simulator exited with code ${code}\n`);
  });
  await waitForSimulator(`http://127.0.0.1:${SIMULATOR_PORT}/healthz`, Date.now() + 10_000);

  const config = loadConfigFile(CONFIG);
  const gateway = await startGateway({ config });
  const project = config.projects[0];
  const key = project?.keys[0]?.value ?? '<no key in data/demo.yaml>';
  const endpoint = project?.endpoints[0]?.slug ?? 'chat';
  const base = `${gateway.url}/${project?.id ?? 'proj_demo'}/${endpoint}/v1`;
  process.stdout.write(
    [
      '',
      `Switchboard is running on ${gateway.url} (simulator upstream on 127.0.0.1:${SIMULATOR_PORT})`,
      `  OpenAI base URL: ${base}`,
      `  demo API key:    ${key}`,
      '  try:',
      `    curl -s ${base}/chat/completions -H "Authorization: Bearer ${key}" -H "Content-Type: application/json" \\`,
      `      -d '{"model":"${project?.endpoints[0]?.model.id ?? 'demo-chat'}","messages":[{"role":"user","content":"hello"}]}'`,
      `    curl -s ${gateway.url}/${project?.id ?? 'proj_demo'}/v1/models -H "Authorization: Bearer ${key}"`,
      '  semantic router (the X-Service-Routed-Endpoint header names the endpoint it picked):',
      `    curl -si ${gateway.url}/${project?.id ?? 'proj_demo'}/_semantic/router/v1/chat/completions -H "Authorization: Bearer ${key}" \\`,
      `      -H "Content-Type: application/json" -d '{"model":"any","messages":[{"role":"user","content":"solve for x: 2x + 3 = 7"}]}'`,
      '',
    ].join('\n'),
  );

  const stop = (): void => {
    simulator.kill('SIGTERM');
    gateway.close().then(() => process.exit(0), () => process.exit(1));
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}

main().catch((err: unknown) => {
  process.stderr.write(`switchboard demo: ${(err as Error).message}\n`);
  process.exit(1);
});
