/**
 * The lines `npm start` prints once the demo runs (src/demo.ts): the base URL and a key that work as
 * printed, curl lines, the dashboard's address and the one command that makes its first owner (the demo
 * config declares no dashboard user: users live in the store, made by `switchboard users create`).
 */
import type { Config } from './config.js';

export const CONFIG = 'data/demo.yaml';
export const SIMULATOR_PORT = 9100;

/** The one command that makes a first owner of the demo project in the store the demo serves. */
export const FIRST_OWNER = (projectId: string): string =>
  `printf '%s\\n' 'a long passphrase' | npx switchboard users create --email you@example.com --password-stdin --role owner --project ${projectId} --config ${CONFIG}`;

export function banner(config: Config, url: string, tls: { cert: string } | null): string {
  const project = config.projects[0];
  const id = project?.id ?? 'proj_demo';
  const key = project?.keys[0]?.value ?? '<no key in data/demo.yaml>';
  const chat = project?.endpoints.find((e) => e.kind === 'chat');
  const live = project?.endpoints.find((e) => e.kind === 'realtime');
  const base = `${url}/${id}/${chat?.slug ?? 'chat'}/v1`;
  const curl = (flags: string): string => (tls ? `curl ${flags} --cacert ${tls.cert}` : `curl ${flags}`);
  const lines = [
    '',
    `Switchboard is running on ${url} (simulator upstream on 127.0.0.1:${SIMULATOR_PORT})`,
    `  OpenAI base URL: ${base}`,
    `  demo API key:    ${key}`,
    `  dashboard:       ${url}/dashboard/`,
    `    its first owner (${id}; the password is read from standard input, 12 characters or more):`,
    `      ${FIRST_OWNER(id)}`,
    '  try:',
    `    ${curl('-s')} ${base}/chat/completions -H "Authorization: Bearer ${key}" -H "Content-Type: application/json" \\`,
    `      -d '{"model":"${chat?.model.id ?? 'demo-chat'}","messages":[{"role":"user","content":"hello"}]}'`,
    `    ${curl('-s')} ${url}/${id}/v1/models -H "Authorization: Bearer ${key}"`,
    '  semantic router (the X-Service-Routed-Endpoint header names the endpoint it picked):',
    `    ${curl('-si')} ${url}/${id}/_semantic/router/v1/chat/completions -H "Authorization: Bearer ${key}" \\`,
    `      -H "Content-Type: application/json" -d '{"model":"any","messages":[{"role":"user","content":"solve for x: 2x + 3 = 7"}]}'`,
  ];
  if (live) {
    const ws = url.replace(/^http/, 'ws');
    lines.push(`  realtime transcription (docs/realtime.md): ${ws}/${id}/${live.slug}/v1/realtime`);
    if (tls) {
      lines.push(
        `    openai SDK realtime client: baseURL ${url}/${id}/${live.slug}/v1`,
        '    the certificate is self-signed; Node clients trust it with',
        `      export NODE_EXTRA_CA_CERTS=${tls.cert}`,
      );
    } else {
      lines.push("    the openai SDK's realtime client (OpenAIRealtimeWS) always dials wss://: for it, run npm start -- --tls");
    }
  }
  lines.push('');
  return lines.join('\n');
}
