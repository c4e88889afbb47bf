/**
 * `WS /{project}/v1/exec/agents/connect` (docs/exec.md "Agent protocol"): execution agents connect here
 * with a join key or their agent key; a bad key is refused with the HTTP error envelope before the
 * upgrade (src/exec/agents/connect-auth.ts). The session is src/exec/agents/agent-session.ts. A plain GET
 * (no upgrade) with a good key answers 426, so the route never reads as missing.
 */
import type { AgentsSystem } from '../exec/agents/agents-system.js';
import { GatewayError } from '../errors.js';
import type { RouteDef } from '../http/server.js';
import type { WsRouteDef } from '../http/ws.js';

export const AGENTS_CONNECT_PATTERN = '/:project/v1/exec/agents/connect';
/** What may wait for an agent that does not read (dispatches carry the invocation's arguments). */
const MAX_BUFFERED_BYTES = 8 * 1024 * 1024;

export function execAgentsConnectRoutes(agents: AgentsSystem): WsRouteDef[] {
  return [
    {
      pattern: AGENTS_CONNECT_PATTERN,
      family: 'exec',
      async upgrade({ req }) {
        const { project, credential } = await agents.authenticate(req.header('authorization'), req.params.project ?? '');
        req.log.project = project.id;
        // Each connection enrolls a manifest (compiled schemas): a key looping on it is refused here, 429.
        await agents.admitConnection(project.id, credential);
        return { protocol: null, maxBufferedBytes: MAX_BUFFERED_BYTES, open: (socket) => agents.openSession(socket, project.id, credential) };
      },
    },
  ];
}

export function execAgentsConnectHttpRoutes(agents: AgentsSystem): RouteDef[] {
  return [
    {
      method: 'GET',
      pattern: AGENTS_CONNECT_PATTERN,
      family: 'exec',
      auth: { kind: 'in-handler', credential: 'an exec agent key or join key', why: 'not an API key: agents.authenticate checks it' },
      handle: async ({ req }) => {
        await agents.authenticate(req.header('authorization'), req.params.project ?? '');
        throw new GatewayError('upgrade_required', { headers: { Upgrade: 'websocket', Connection: 'Upgrade' } });
      },
    },
  ];
}
