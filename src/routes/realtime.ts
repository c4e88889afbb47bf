/**
 * WS /{project}/{endpoint}/v1/realtime (SPEC "Audio"): streaming transcription. The upgrade request is
 * authenticated like any inference request (it counts as one against the limits): `Authorization: Bearer`,
 * or, for browsers that cannot set headers, the subprotocol `openai-insecure-api-key.<key>`. The endpoint
 * must be a realtime endpoint; its `realtime.mode` picks the session (relay or segment). The upgrade may
 * also declare the protocol dialect (beta or GA, core/realtime/dialect.ts).
 */
import type { RealtimeConfig } from '../config.js';
import { REALTIME_DEFAULTS } from '../config.js';
import type { AuthenticatedKey } from '../core/auth/authenticate.js';
import { isPromise } from '../core/coordination/admission-port.js';
import { dialectFromUpgrade } from '../core/realtime/dialect.js';
import { GatewayError } from '../errors.js';
import type { RouteContext, RouteDef } from '../http/server.js';
import type { WsAccept, WsRouteDef } from '../http/ws.js';
import type { ChatServices } from '../app/chat/chat-dispatch.js';
import { requireBudget } from '../app/endpoint-access.js';
import { keyed, requireEndpoint, requireKey, wrongEndpointKind } from './guard.js';
import { RelaySession } from '../app/realtime/realtime-relay.js';
import { SegmentSession } from '../app/realtime/realtime-segment.js';
import type { RealtimeContext } from '../app/realtime/realtime-session.js';

export const REALTIME_PATTERN = '/:project/:endpoint/v1/realtime';
const KEY_PROTOCOL = 'openai-insecure-api-key.';

export interface RealtimeServices extends ChatServices {
  /** Per endpoint id, from the config file (docs/realtime.md). */
  realtimeSettings(endpointId: string): RealtimeConfig;
}

/** The offered subprotocols; the key one, if any, becomes the Authorization header. */
function protocols(headers: Record<string, string>): { offered: string[]; key: string | null } {
  const offered = (headers['sec-websocket-protocol'] ?? '').split(',').map((p) => p.trim()).filter(Boolean);
  const keyProtocol = offered.find((p) => p.startsWith(KEY_PROTOCOL));
  return { offered, key: keyProtocol ? keyProtocol.slice(KEY_PROTOCOL.length) : null };
}

/**
 * Browsers fail the handshake unless the server picks one of the offered subprotocols: `realtime` when
 * offered, else the first that does not carry the key, else (only the key was offered) that one.
 */
function chosenProtocol(offered: string[]): string | null {
  if (offered.includes('realtime')) return 'realtime';
  return offered.find((p) => !p.startsWith(KEY_PROTOCOL)) ?? offered[0] ?? null;
}

export function realtimeRoutes(services: RealtimeServices): WsRouteDef[] {
  return [
    {
      pattern: REALTIME_PATTERN,
      family: 'realtime',
      upgrade(ctx) {
        const { req } = ctx;
        const { offered, key } = protocols(req.headers);
        if (req.header('authorization') === undefined && key !== null) req.headers.authorization = `Bearer ${key}`;
        // Called here, not declared: the key may come in a subprotocol, moved to Authorization just above.
        const auth = requireKey(ctx, services, 'inference');
        return isPromise(auth) ? auth.then((admitted) => accept(services, ctx, offered, admitted)) : accept(services, ctx, offered, auth);
      },
    },
  ];
}

/** The upgrade past the key: a realtime endpoint, active, within budget; the session it opens. */
function accept(services: RealtimeServices, ctx: RouteContext, offered: string[], auth: AuthenticatedKey): WsAccept {
  const { req } = ctx;
  const access = requireEndpoint(req, services, auth);
  const { endpoint } = access;
  if (endpoint.kind !== 'realtime') {
    throw wrongEndpointKind(endpoint, '/v1/realtime needs a realtime endpoint');
  }
  if (endpoint.status !== 'active') throw new GatewayError('endpoint_unavailable', { message: `Endpoint ${endpoint.slug} is ${endpoint.status}, not active.` });
  requireBudget(ctx, services, auth, access);
  const settings = services.realtimeSettings(endpoint.id);
  const session: RealtimeContext = {
    services,
    endpoint,
    settings,
    auth,
    account: { projectId: auth.project.id, workspaceId: access.workspaceId, keyId: auth.key.id },
    requestId: req.requestId,
    dialect: dialectFromUpgrade(req.header('openai-beta'), offered, req.searchParams()),
  };
  return {
    protocol: chosenProtocol(offered),
    maxBufferedBytes: settings.max_client_buffer_bytes,
    open: (socket) => (settings.mode === 'relay' ? new RelaySession(socket, session) : new SegmentSession(socket, session)),
  };
}

/** A plain GET (no upgrade) on the realtime path: 426, so the route never reads as missing. */
export function realtimeHttpRoutes(services: ChatServices): RouteDef[] {
  return [
    keyed(services, 'inference', {
      method: 'GET',
      pattern: REALTIME_PATTERN,
      family: 'realtime',
      handle: () => {
        throw new GatewayError('upgrade_required', { headers: { Upgrade: 'websocket', Connection: 'Upgrade' } });
      },
    }),
  ];
}

export function realtimeSettingsFrom(byId: ReadonlyMap<string, RealtimeConfig | undefined>): (id: string) => RealtimeConfig {
  return (id) => byId.get(id) ?? REALTIME_DEFAULTS;
}
