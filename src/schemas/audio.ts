/**
 * Wire rules of the audio routes (SPEC "Audio" leaves the bodies open; we follow the widely used audio
 * API). Speech is a JSON body; transcription and translation fields arrive as multipart text fields,
 * checked one at a time as they stream past (routes/audio-upload.ts).
 */
import { z } from 'zod';
import { GatewayError } from '../errors.js';
import { absentIfNull, LANGUAGE_CODE, LANGUAGE_RULE, nonEmptyString, numberBetween, oneOf, string } from './fields.js';
import { issueToGatewayError } from './issues.js';
import { safeParseCut } from './long-arrays.js';

export const TRANSCRIPT_FORMATS = ['json', 'text', 'srt', 'verbose_json', 'vtt', 'diarized_json'] as const;
export const SPEECH_FORMATS = ['mp3', 'opus', 'aac', 'flac', 'wav', 'pcm'] as const;

const speechSchema = z.looseObject({
  model: nonEmptyString(),
  input: nonEmptyString().max(4096, 'must be at most 4096 characters'),
  voice: z.union([nonEmptyString(), z.looseObject({ id: nonEmptyString() })], 'must be a voice name or an object with an id'),
  instructions: absentIfNull(string()),
  response_format: absentIfNull(oneOf(SPEECH_FORMATS)),
  speed: absentIfNull(numberBetween(0.25, 4)),
  stream_format: absentIfNull(oneOf(['audio', 'sse'])),
});
export type SpeechRequest = z.infer<typeof speechSchema>;

export function parseSpeechRequest(body: unknown): SpeechRequest {
  const result = safeParseCut(speechSchema, body);
  if (!result.success) throw issueToGatewayError(result.error.issues, body);
  return result.data;
}

function invalid(param: string, message: string): GatewayError {
  return new GatewayError('invalid_request', { param, message });
}

/** One multipart text field of a transcription or translation; null when it is acceptable. */
export function checkTranscriptionField(name: string, value: string, task: 'transcribe' | 'translate'): GatewayError | null {
  switch (name) {
    case 'response_format':
      return (TRANSCRIPT_FORMATS as readonly string[]).includes(value)
        ? null
        : invalid(name, `response_format must be one of ${TRANSCRIPT_FORMATS.join(', ')}; got ${JSON.stringify(value)}.`);
    case 'temperature': {
      const t = Number(value);
      return value.trim() !== '' && t >= 0 && t <= 1 ? null : invalid(name, `temperature must be a number between 0 and 1; got ${JSON.stringify(value)}.`);
    }
    case 'timestamp_granularities[]':
    case 'timestamp_granularities':
      return value === 'word' || value === 'segment' ? null : invalid(name, `timestamp_granularities must be word or segment; got ${JSON.stringify(value)}.`);
    case 'stream':
      if (value !== 'true' && value !== 'false') return invalid(name, `stream must be true or false; got ${JSON.stringify(value)}.`);
      return task === 'translate' && value === 'true' ? invalid(name, 'stream is not supported on translations.') : null;
    case 'language':
      return LANGUAGE_CODE.test(value) ? null : invalid(name, `language ${LANGUAGE_RULE}; got ${JSON.stringify(value)}.`);
    default:
      return null;
  }
}
