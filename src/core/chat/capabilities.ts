/**
 * Refuses what the endpoint's model or the deployment cannot serve as sent. SPEC "What the service
 * does" 4: a request that cannot be served as specified returns an error, never a substitute answer,
 * so nothing here drops a tool or a part to make a request fit. Pure.
 */
import type { ModelConfig } from '../../config.js';
import { GatewayError } from '../../errors.js';
import type { ChatRequest } from '../../schemas/chat-request.js';
import { withArticle } from '../article.js';

type Capability = ModelConfig['capabilities'][number];

export interface CapabilityContext {
  model: ModelConfig;
  /** The workspace forbids storing completions (SPEC "store"). */
  zeroDataRetention: boolean;
  /** SPEC "modalities": audio output is produced by a speech endpoint of the same project. */
  projectHasSpeechEndpoint: boolean;
  /** SPEC "Message object": video input is off unless the deployment enables it. */
  videoInputEnabled: boolean;
  /** SPEC "Message object": audio input is operator-gated, on by default (features.audio_input). */
  audioInputEnabled?: boolean;
}

export function checkCapabilities(req: ChatRequest, ctx: CapabilityContext): void {
  const has = (capability: Capability): boolean => ctx.model.capabilities.includes(capability);
  if (!has('tools')) checkNoTools(req);
  checkResponseFormat(req, has('structured_output'));
  checkContentParts(req, { vision: has('vision'), audio: has('audio_input'), audioEnabled: ctx.audioInputEnabled ?? true, video: has('video_input'), videoEnabled: ctx.videoInputEnabled });
  if (req.modalities?.includes('audio') && !ctx.projectHasSpeechEndpoint) {
    throw new GatewayError('invalid_request', {
      param: 'modalities',
      message: 'modalities includes audio, but audio output needs a speech endpoint in this project and there is none; send ["text"].',
    });
  }
  if (req.modalities?.includes('audio') && req.stream === true) {
    // docs/decisions.md "Audio in chat": the speech endpoint speaks the finished answer, so there is no
    // audio to stream while the text streams.
    throw new GatewayError('unsupported_value', {
      param: 'stream',
      message: 'stream: true cannot be combined with modalities ["text", "audio"]: the audio is synthesized from the finished answer. Send stream: false, or modalities ["text"] to stream text only.',
    });
  }
  checkRetention(req, ctx.zeroDataRetention);
}

/**
 * SPEC "store": an explicit true in a zero-data-retention workspace is refused. Apart from the model's
 * capabilities because the multimodel route checks it too, before it plans (no endpoint is known there).
 */
export function checkRetention(req: Pick<ChatRequest, 'store'>, zeroDataRetention: boolean): void {
  if (req.store === true && zeroDataRetention) {
    throw new GatewayError('retention_not_permitted', {
      param: 'store',
      message: 'store: true is not permitted in a zero-data-retention workspace; omit store or send false.',
    });
  }
}

/** SPEC "Chat and routing errors": tools or tool-call history on a model without tool calling. */
function checkNoTools(req: ChatRequest): void {
  if (req.tools && req.tools.length > 0) {
    throw new GatewayError('unsupported_parameter', {
      param: 'tools',
      message: "tools are not supported: this endpoint's model does not support tool calling.",
    });
  }
  const index = req.messages.findIndex((m) => (m.role === 'assistant' && (m.tool_calls?.length ?? 0) > 0) || m.role === 'tool');
  const message = req.messages[index];
  if (message) {
    const what = message.role === 'tool' ? 'is a tool result' : 'carries tool_calls';
    throw new GatewayError('unsupported_parameter', {
      param: 'messages',
      message: `messages[${index}] ${what}, but this endpoint's model does not support tool calling.`,
    });
  }
}

function checkResponseFormat(req: ChatRequest, structuredOutput: boolean): void {
  const type = req.response_format?.type;
  if (!structuredOutput && (type === 'json_object' || type === 'json_schema')) {
    throw new GatewayError('unsupported_parameter', {
      param: 'response_format',
      message: `response_format ${type} is not supported: this endpoint's model does not support structured output; use type text or omit it.`,
    });
  }
}

interface MediaSupport {
  vision: boolean;
  audio: boolean;
  audioEnabled: boolean;
  video: boolean;
  videoEnabled: boolean;
}

function checkContentParts(req: ChatRequest, support: MediaSupport): void {
  req.messages.forEach((message, i) => {
    if (!Array.isArray(message.content)) return;
    message.content.forEach((part, j) => {
      const missing = missingCapability(part.type, support);
      if (missing !== null) {
        throw new GatewayError('invalid_request', {
          param: `messages[${i}].content[${j}]`,
          message: `messages[${i}].content[${j}] is ${withArticle(part.type)} part, but ${missing}.`,
        });
      }
    });
  });
}

function missingCapability(type: string, support: MediaSupport): string | null {
  if (type === 'image_url' && !support.vision) return "this endpoint's model does not support image input (vision)";
  if (type === 'input_audio' && !support.audioEnabled) return 'audio input is turned off on this deployment';
  if (type === 'input_audio' && !support.audio) return "this endpoint's model does not support audio input (audio_input)";
  if (type === 'video_url' && !support.videoEnabled) return 'video input is not enabled on this deployment';
  if (type === 'video_url' && !support.video) return "this endpoint's model does not support video input (video_input)";
  return null;
}
