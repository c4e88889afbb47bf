/** The runtime checks at start: the uWebSockets.js binary, and warnings about what outbound fetches may reach. */
import type { Config } from '../config.js';
import { allowedTargetsWarnings } from '../core/net/address-policy.js';
import { loadUws, UwsFallbackError, type Uws } from '../http/uws.js';
import type { Logger } from '../log.js';

/** uWebSockets.js, refusing its pure-JS fallback unless the operator allows it (http/uws.ts). */
export function loadRuntime(config: Config, logger: Logger): Uws {
  const { uws, native, binary } = loadUws();
  const allowFallback = config.server.allow_uws_fallback || process.env.SWITCHBOARD_ALLOW_UWS_FALLBACK === '1';
  if (!native && !allowFallback) throw new UwsFallbackError();
  if (native) logger.info({ binary }, 'uWebSockets.js: running on the native binary');
  else logger.warn('uWebSockets.js: running on the pure-JS fallback (allowed by the operator); expect far lower throughput');
  if (config.security.allow_private_targets || config.security.allow_http_targets) {
    logger.warn({ security: config.security }, 'outbound fetches may reach private addresses or plain HTTP: for local testing only');
  }
  for (const warning of allowedTargetsWarnings(config.security.allowed_targets)) logger.warn(warning);
  return uws;
}
