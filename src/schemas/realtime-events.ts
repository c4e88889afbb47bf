/**
 * The realtime transcription protocol (docs/realtime.md): client events parsed and checked at the edge,
 * server events built here. Every bad client message becomes one `error` event naming the problem; the
 * session goes on. Pure.
 */
import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import { GatewayError } from '../errors.js';
import { absentIfNull, integer, languageCode, nonEmptyString, numberBetween, string } from './fields.js';
import { issueToGatewayError, needs } from './issues.js';
import { safeParseCut } from './long-arrays.js';
import { betaSessionFromGa, type Dialect } from '../core/realtime/dialect.js';

const eventId = absentIfNull(string());

const turnDetectionSchema = z.looseObject({
  type: z.literal('server_vad', needs('must be server_vad (the gateway detects speech by energy; semantic_vad is not supported)')),
  threshold: absentIfNull(numberBetween(0, 1)),
  prefix_padding_ms: absentIfNull(integer('must be an integer between 0 and 2000', { min: 0, max: 2000 })),
  silence_duration_ms: absentIfNull(integer('must be an integer between 100 and 10000', { min: 100, max: 10_000 })),
});

const transcriptionSchema = absentIfNull(
  // The language goes to the transcription server with every segment: the transcriptions route's rule.
  z.looseObject({ model: absentIfNull(nonEmptyString()), language: absentIfNull(languageCode()), prompt: absentIfNull(string()) }, needs('must be an object')),
);
const turnDetectionField = z.union([z.null(), turnDetectionSchema], needs('must be null or an object with type server_vad')).optional();

/** The beta session (transcription_session.update), which is also the internal shape of every update. */
const sessionSchema = z.looseObject(
  {
    input_audio_format: absentIfNull(z.literal('pcm16', needs('must be pcm16 (16-bit mono little-endian at 24 kHz)'))),
    input_audio_transcription: transcriptionSchema,
    turn_detection: turnDetectionField,
  },
  needs('must be an object'),
);

/**
 * The GA session (session.update): the same rules at their GA paths, so an error names the field the
 * client sent (`session.audio.input.turn_detection.type`). Only transcription sessions are served.
 */
const gaSessionSchema = z.looseObject(
  {
    type: z.literal('transcription', needs('must be transcription (this socket serves transcription sessions only; conversation sessions are not supported)')),
    audio: absentIfNull(
      z.looseObject(
        {
          input: absentIfNull(
            z.looseObject(
              {
                format: absentIfNull(
                  z.looseObject(
                    {
                      type: absentIfNull(z.literal('audio/pcm', needs('must be audio/pcm (16-bit mono little-endian at 24 kHz; G.711 is not supported)'))),
                      rate: absentIfNull(z.literal(24_000, needs('must be 24000'))),
                    },
                    needs('must be an object'),
                  ),
                ),
                transcription: transcriptionSchema,
                turn_detection: turnDetectionField,
              },
              needs('must be an object'),
            ),
          ),
        },
        needs('must be an object'),
      ),
    ),
  },
  needs('must be an object with type transcription'),
);

const clientEventSchema = z.discriminatedUnion('type', [
  z.looseObject({ type: z.literal('transcription_session.update'), event_id: eventId, session: sessionSchema }),
  z.looseObject({ type: z.literal('session.update'), event_id: eventId, session: gaSessionSchema }),
  z.looseObject({ type: z.literal('input_audio_buffer.append'), event_id: eventId, audio: string('must be base64-encoded PCM16 audio') }),
  z.looseObject({ type: z.literal('input_audio_buffer.commit'), event_id: eventId }),
  z.looseObject({ type: z.literal('input_audio_buffer.clear'), event_id: eventId }),
]);

export type ClientEvent = z.infer<typeof clientEventSchema>;
export type SessionUpdate = z.infer<typeof sessionSchema>;
export type TurnDetection = z.infer<typeof turnDetectionSchema>;
export const CLIENT_EVENT_TYPES = ['session.update', 'transcription_session.update', 'input_audio_buffer.append', 'input_audio_buffer.commit', 'input_audio_buffer.clear'];

/** A session update in either dialect, as the internal (beta) update plus the client's raw session. */
export interface Update {
  readonly dialect: Dialect;
  readonly session: SessionUpdate;
  /** The session as the client sent it, in the beta shape: what a relay forwards (unknown fields kept). */
  readonly raw: Record<string, unknown>;
}

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

export type Parsed =
  | { readonly ok: true; readonly event: ClientEvent; readonly pcm: Buffer | null; readonly update: Update | null }
  | { readonly ok: false; readonly error: GatewayError; readonly eventId: string | null };

/** One client frame: JSON, a known type, the type's fields, and for appends whole PCM16 samples. */
export function parseClientEvent(data: Buffer, isBinary: boolean): Parsed {
  const fail = (error: GatewayError, id: string | null = null): Parsed => ({ ok: false, error, eventId: id });
  if (isBinary) return fail(new GatewayError('invalid_request', { message: 'Binary frames are not accepted: send JSON text events (audio goes base64 in input_audio_buffer.append).' }));
  let raw: unknown;
  try {
    raw = JSON.parse(data.toString('utf8'));
  } catch (err) {
    return fail(new GatewayError('invalid_json', { message: `The message is not valid JSON: ${(err as Error).message}` }));
  }
  if (!raw || typeof raw !== 'object' || Array.isArray(raw)) return fail(new GatewayError('invalid_request', { message: 'An event must be a JSON object with a type.' }));
  const obj = raw as Record<string, unknown>;
  const id = typeof obj.event_id === 'string' ? obj.event_id : null;
  if (typeof obj.type !== 'string') return fail(new GatewayError('invalid_request', { param: 'type', message: 'type is required: the client event type.' }), id);
  if (!CLIENT_EVENT_TYPES.includes(obj.type)) {
    return fail(new GatewayError('unknown_event', { param: 'type', message: `Unknown client event type ${JSON.stringify(obj.type)}; supported: ${CLIENT_EVENT_TYPES.join(', ')}.` }), id);
  }
  const result = safeParseCut(clientEventSchema, raw);
  if (!result.success) return fail(issueToGatewayError(result.error.issues, raw), id);
  const event = result.data;
  const rawSession = obj.session as Record<string, unknown>;
  if (event.type === 'transcription_session.update') return { ok: true, event, pcm: null, update: { dialect: 'beta', session: event.session, raw: rawSession } };
  if (event.type === 'session.update') {
    // Already valid at its GA paths, so the beta reading of it cannot fail.
    const raw = betaSessionFromGa(rawSession);
    return { ok: true, event, pcm: null, update: { dialect: 'ga', session: sessionSchema.parse(raw), raw } };
  }
  if (event.type !== 'input_audio_buffer.append') return { ok: true, event, pcm: null, update: null };
  if (!BASE64.test(event.audio)) return fail(new GatewayError('invalid_request', { param: 'audio', message: 'audio must be base64-encoded PCM16 audio.' }), id);
  const pcm = Buffer.from(event.audio, 'base64');
  if (pcm.length % 2 !== 0) return fail(new GatewayError('invalid_request', { param: 'audio', message: 'audio must hold whole 16-bit samples (an even number of bytes).' }), id);
  return { ok: true, event, pcm, update: null };
}

export const newEventId = (): string => `event_${randomBytes(10).toString('hex')}`;
export const newItemId = (): string => `item_${randomBytes(10).toString('hex')}`;

/**
 * An error as an event carries it: the envelope's fields, and what SPEC "Errors" adds to a 429 (`retry_after`,
 * `retry_strategy`: the values the HTTP answer to the same refusal carries).
 */
export function eventError(e: GatewayError): Record<string, unknown> {
  const { type, code, message, param, ...extra } = e.toEnvelope().error;
  return { type, code, message, param, ...extra };
}

export function errorEvent(e: GatewayError, clientEventId: string | null): Record<string, unknown> {
  return { type: 'error', event_id: newEventId(), error: { ...eventError(e), event_id: clientEventId } };
}

export function serverEvent(type: string, fields: Record<string, unknown> = {}): Record<string, unknown> {
  return { type, event_id: newEventId(), ...fields };
}
