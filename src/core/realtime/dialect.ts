/**
 * The two dialects of the realtime transcription protocol (docs/realtime.md, "Dialects"). They differ only
 * in how a session is configured and reported: the beta configures it with `transcription_session.update`
 * and a flat session object, GA with `session.update` carrying `{type: 'transcription', audio: {input}}`.
 * Audio, commit, VAD and transcript events are named and shaped alike in both. Internally every session
 * is kept in the beta shape (the one the relay upstream speaks); these functions translate at the edge.
 * Pure.
 */

export type Dialect = 'beta' | 'ga';

type Json = Record<string, unknown>;

/** What the beta clients send: the OpenAI-Beta header (Node, Python) or, from browsers, this subprotocol. */
const BETA_HEADER = /(?:^|,)\s*realtime=v1\s*(?:,|$)/i;
export const BETA_SUBPROTOCOL = 'openai-beta.realtime-v1';

/**
 * The dialect the upgrade request declares, or null when it declares none. A beta client says so (header
 * or subprotocol); a GA client has no marker of its own, but the GA SDKs (openai-node's
 * `OpenAIRealtimeWS`, openai-python's `realtime.connect`) always put `?model=` in the URL without the beta
 * marker, which is how the upstream API tells GA apart too. A bare URL (what this gateway documented
 * before GA) declares nothing: the first session message decides.
 */
export function dialectFromUpgrade(betaHeader: string | undefined, offeredProtocols: readonly string[], query: URLSearchParams): Dialect | null {
  if ((betaHeader !== undefined && BETA_HEADER.test(betaHeader)) || offeredProtocols.includes(BETA_SUBPROTOCOL)) return 'beta';
  if (query.has('model')) return 'ga';
  return null;
}

export const UPDATE_EVENT: Readonly<Record<Dialect, string>> = { beta: 'transcription_session.update', ga: 'session.update' };

/** `created` or `updated` in the dialect's name: `transcription_session.created`, `session.updated`. */
export function sessionEventType(dialect: Dialect, kind: 'created' | 'updated'): string {
  return dialect === 'ga' ? `session.${kind}` : `transcription_session.${kind}`;
}

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * A GA `session.update`'s session (already validated) as the beta session update it means. Only the
 * fields the client sent appear, so fields left out keep their value, as in the beta. Works on the raw
 * JSON so that what the gateway does not look at (`transcription.delay`, `turn_detection.create_response`,
 * the noise reduction object) still reaches a relay upstream.
 */
export function betaSessionFromGa(session: Json): Json {
  const out: Json = {};
  const input = isObject(session.audio) && isObject(session.audio.input) ? session.audio.input : {};
  // Validation admits only PCM16 at 24 kHz (audio/pcm), so a format that is present means pcm16.
  if (isObject(input.format)) out.input_audio_format = 'pcm16';
  if ('transcription' in input) out.input_audio_transcription = input.transcription;
  if ('turn_detection' in input) out.turn_detection = input.turn_detection;
  if ('noise_reduction' in input) out.input_audio_noise_reduction = input.noise_reduction;
  if ('include' in session) out.include = session.include;
  return out;
}

const GA_FORMATS: Readonly<Record<string, Json>> = {
  pcm16: { type: 'audio/pcm', rate: 24_000 },
  g711_ulaw: { type: 'audio/pcmu' },
  g711_alaw: { type: 'audio/pcma' },
};

/** A beta session object (ours, or a relay upstream's) in the GA shape a GA client expects. */
export function gaSessionFromBeta(session: Json): Json {
  const format = typeof session.input_audio_format === 'string' ? (GA_FORMATS[session.input_audio_format] ?? { type: session.input_audio_format }) : GA_FORMATS.pcm16;
  const out: Json = {};
  if (session.id !== undefined) out.id = session.id;
  out.object = session.object ?? 'realtime.transcription_session';
  out.type = 'transcription';
  out.audio = {
    input: {
      format,
      transcription: session.input_audio_transcription ?? null,
      turn_detection: session.turn_detection ?? null,
      noise_reduction: session.input_audio_noise_reduction ?? null,
    },
  };
  out.include = session.include ?? null;
  if (session.expires_at !== undefined) out.expires_at = session.expires_at;
  return out;
}
