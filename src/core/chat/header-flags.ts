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
  // The six SPEC leaves unnamed (docs/decisions.md "The agentic harness"): X-Service-Augment-<Feature>.
  maxTokensFloor: 'x-service-augment-max-tokens-floor',
  capabilityToolDrop: 'x-service-augment-capability-tool-drop',
  correctiveRetries: 'x-service-augment-corrective-retries',
  fabricatedToolCalls: 'x-service-augment-fabricated-tool-calls',
  toolAllowlist: 'x-service-augment-tool-allowlist',
  toolChoiceDemotion: 'x-service-augment-tool-choice-demotion',
  compression: 'x-service-compression',
} as const;

export type HarnessFeature = keyof typeof FEATURE_HEADERS;

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

export type HarnessFlags = { readonly [F in HarnessFeature]: boolean } & {
  /** Some feature beyond media URL resolution (which is on at the faithful floor) is on. */
  readonly any: boolean;
};

const FEATURES = Object.keys(FEATURE_HEADERS) as HarnessFeature[];

/** The faithful floor: what a request without any augmentation header gets on an API route. */
export const HARNESS_OFF: HarnessFlags = Object.freeze({
  ...(Object.fromEntries(FEATURES.map((f) => [f, false])) as Record<HarnessFeature, boolean>),
  mediaUrlResolution: true,
  any: false,
});

/**
 * Every switch of the harness for one request, through the one precedence rule (augmentationFlag).
 * The hot path: with no `x-service-augment*` or `x-service-compression` header and the API surface's
 * default (off), it costs one scan of the header names and returns the shared HARNESS_OFF.
 * `surfaceDefault` is true only on the service's own chat surfaces (the dashboard playground).
 */
export function resolveHarness(headers: Readonly<Record<string, string>>, surfaceDefault = false): HarnessFlags {
  if (!surfaceDefault && !hasAugmentationHeader(headers)) return HARNESS_OFF;
  const flags = {} as Record<HarnessFeature, boolean>;
  let any = false;
  for (const feature of FEATURES) {
    const on = augmentationFlag(headers, FEATURE_HEADERS[feature], surfaceDefault);
    flags[feature] = on;
    if (on && feature !== 'mediaUrlResolution') any = true;
  }
  return { ...flags, any };
}

function hasAugmentationHeader(headers: Readonly<Record<string, string>>): boolean {
  for (const name in headers) {
    // 'x-service-a' / 'x-service-c': the prefixes of X-Service-Augment* and X-Service-Compression only.
    if (name.length > 10 && name.startsWith('x-service-') && (name.charCodeAt(10) === 97 || name.charCodeAt(10) === 99)) {
      if (name.startsWith('x-service-augment') || name === FEATURE_HEADERS.compression) return true;
    }
  }
  return false;
}
