/**
 * The API test config plus audio endpoints: transcription, speech, and realtime endpoints in both modes
 * (segment with server VAD, relay to the simulator's realtime socket), with short idle timeouts and a
 * small slow-client cap so those paths are tested without long waits.
 */
import { testConfig, type ConfigOverrides, type TestKeys } from './configs.js';

export const TRANSCRIBE_ID = 'a1a1a1a1-a1a1-4a1a-8a1a-a1a1a1a1a1a1';
export const SPEECH_ID = 'b2b2b2b2-b2b2-4b2b-8b2b-b2b2b2b2b2b2';
export const SEGMENT_ID = 'c3c3c3c3-c3c3-4c3c-8c3c-c3c3c3c3c3c3';
export const RELAY_ID = 'd4d4d4d4-d4d4-4d4d-8d4d-d4d4d4d4d4d4';
export const IDLE_ID = 'e5e5e5e5-e5e5-4e5e-8e5e-e5e5e5e5e5e5';
export const DROP_ID = 'b8b8b8b8-b8b8-4b8b-8b8b-b8b8b8b8b8b8';
export const SMALL_BUFFER_ID = 'c9c9c9c9-c9c9-4c9c-8c9c-c9c9c9c9c9c9';
export const VISION_ID = 'f6f6f6f6-f6f6-4f6f-8f6f-f6f6f6f6f6f6';
export const AUDIO_CHAT_ID = 'a7a7a7a7-a7a7-4a7a-8a7a-a7a7a7a7a7a7';

function audioEndpoint(id: string, slug: string, kind: string, upstream: string, model: string, extra: Record<string, unknown> = {}) {
  return {
    id,
    slug,
    name: `Test ${slug}`,
    kind,
    tier: 'gpu',
    model: { id: `model-${slug}`, context_window: 8192 },
    upstream: { base_url: upstream, model },
    ...extra,
  };
}

export function audioTestConfig(upstream: string, keys: TestKeys, overrides: ConfigOverrides & { audio?: Record<string, unknown>; media?: Record<string, unknown> } = {}) {
  const config = testConfig(upstream, keys, overrides) as ReturnType<typeof testConfig> & Record<string, unknown>;
  const project = config.projects[0] as { endpoints: unknown[] };
  project.endpoints.push(
    audioEndpoint(TRANSCRIBE_ID, 'whisper', 'transcription', upstream, 'sim-whisper'),
    audioEndpoint(SPEECH_ID, 'tts', 'speech', upstream, 'sim-tts'),
    audioEndpoint(SEGMENT_ID, 'live', 'realtime', upstream, 'sim-whisper', {
      realtime: { mode: 'segment', vad: { silence_ms: 200, prefix_padding_ms: 100 }, max_client_buffer_bytes: 64 * 1024 },
    }),
    audioEndpoint(RELAY_ID, 'live-relay', 'realtime', upstream, 'sim-realtime', { realtime: { mode: 'relay' } }),
    audioEndpoint(IDLE_ID, 'live-idle', 'realtime', upstream, 'sim-whisper', { realtime: { mode: 'segment', idle_timeout_ms: 300 } }),
    // A relay upstream that ends every session right after `created` (the simulator's sim_close knob).
    audioEndpoint(DROP_ID, 'live-drop', 'realtime', upstream, 'sim-realtime', {
      realtime: { mode: 'relay', upstream_ws_url: `${upstream.replace(/^http/, 'ws').replace(/\/+$/, '')}/realtime?sim_close=1011` },
    }),
    audioEndpoint(SMALL_BUFFER_ID, 'live-small', 'realtime', upstream, 'sim-whisper', { realtime: { mode: 'segment', max_buffer_bytes: 4800 } }),
    audioEndpoint(VISION_ID, 'vision', 'chat', upstream, 'sim-chat', { model: { id: 'model-vision', context_window: 65536, capabilities: ['vision'] } }),
    audioEndpoint(AUDIO_CHAT_ID, 'listener', 'chat', upstream, 'sim-chat', { model: { id: 'model-listener', context_window: 65536, capabilities: ['audio_input'] } }),
  );
  if (overrides.audio) config.audio = overrides.audio;
  if (overrides.media) config.media = overrides.media;
  return config;
}
