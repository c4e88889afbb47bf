/**
 * Boolean request headers and the augmentation switches (SPEC "Chat completions and routing", request
 * headers, and "Passthrough and augmentation rules" 2). Header names are lowercase, as the HTTP layer
 * hands them over.
 */

export const AUGMENT_HEADER = 'x-service-augment';

export const FEATURE_HEADERS = {
  maxOutputTokensClamp: 'x-service-augment-max-output-tokens-clamp',
  reasoningNormalization: 'x-service-augment-reasoning-normalization',
  fanoutNudge: 'x-service-augment-fanout-nudge',
  compaction: 'x-service-augment-compaction',
  toolTopK: 'x-service-augment-tool-top-k',
  mediaUrlResolution: 'x-service-augment-media-url-resolution',
  compression: 'x-service-compression',
} as const;

const ENABLE = new Set(['on', '1', 'true', 'yes']);
const DISABLE = new Set(['off', '0', 'false', 'no']);

/** null means "treat as absent": SPEC says any value outside the two lists is ignored, not refused. */
export function parseBooleanHeader(value: string | undefined): boolean | null {
  if (value === undefined) return null;
  const normalized = value.trim().toLowerCase();
  if (ENABLE.has(normalized)) return true;
  if (DISABLE.has(normalized)) return false;
  return null;
}

/**
 * Whether a feature is on for this request. The per-feature header wins, then X-Service-Augment, then
 * the surface default (off for API traffic; the service's own chat and MCP surfaces pass true).
 * Two headers depart from that precedence, as SPEC states for each:
 * - Tool-Top-K is off everywhere, even under X-Service-Augment: on; only its own header enables it.
 * - Media-URL-Resolution is on everywhere, the faithful floor included; only its own `off` disables it.
 */
export function augmentationFlag(headers: Readonly<Record<string, string>>, featureHeader: string, surfaceDefault = false): boolean {
  const own = parseBooleanHeader(headers[featureHeader]);
  if (own !== null) return own;
  if (featureHeader === FEATURE_HEADERS.toolTopK) return false;
  if (featureHeader === FEATURE_HEADERS.mediaUrlResolution) return true;
  return parseBooleanHeader(headers[AUGMENT_HEADER]) ?? surfaceDefault;
}

/** Server-side image fetch (SPEC "Message object"): on unless the client opts out. */
export function mediaUrlResolutionEnabled(headers: Readonly<Record<string, string>>): boolean {
  return augmentationFlag(headers, FEATURE_HEADERS.mediaUrlResolution);
}
