/**
 * A Responses request is checked and served as a chat turn (translate.ts), so a refusal of that turn names
 * chat fields: `messages`, `max_tokens`, `response_format`. A Responses client sent none of them; this
 * puts the refusal back in the terms of the request it did send (param and message), code unchanged.
 */
import { GatewayError } from '../../errors.js';
import { describe } from '../describe-value.js';

/** Chat paths the translation writes -> the Responses field each came from; first match wins. */
const RENAMES: readonly (readonly [RegExp, string])[] = [
  [/^max_completion_tokens|^max_tokens/, 'max_output_tokens'],
  [/^response_format\.json_schema/, 'text.format'],
  [/^response_format/, 'text.format'],
  [/^reasoning_effort/, 'reasoning.effort'],
  // Asked for by include: message.output_text.logprobs (translate.ts).
  [/^logprobs/, 'include'],
  [/^verbosity/, 'text.verbosity'],
  [/^tools\[(\d+)\]\.function/, 'tools[$1]'],
  [/^tool_choice\.function/, 'tool_choice'],
];

export interface ResponsesOrigin {
  /** The request's `input` as sent (absent: undefined). */
  readonly input: unknown;
  /** `instructions` became the chat turn's first message. */
  readonly hasInstructions: boolean;
}

/** The Responses field a chat param came from, or null when the name is the same in both APIs. */
export function responsesParamOf(param: string, origin: ResponsesOrigin): string | null {
  const message = /^messages(?:\[(\d+)\])?/.exec(param);
  if (message) return message[1] === '0' && origin.hasInstructions ? 'instructions' : 'input';
  for (const [pattern, to] of RENAMES) if (pattern.test(param)) return param.replace(pattern, to);
  return null;
}

/** `err` in Responses terms; other errors, and params both APIs share (temperature, tools[0].type), as they are. */
export function asResponsesRefusal(err: unknown, origin: ResponsesOrigin): unknown {
  if (!(err instanceof GatewayError) || err.param === null) return err;
  const param = responsesParamOf(err.param, origin);
  if (param === null) return err;
  // A chat message is not one input item (calls join, the chain comes first): the message keeps the chat
  // path, so "is an image_url part" still says which part, and the param names the field sent.
  const subject = param === 'input' && err.param !== 'messages' ? `input (${err.param} of the chat turn it became)` : param;
  const message =
    err.param === 'messages' && err.code === 'invalid_request'
      ? `input must be a non-empty string or array of input items (or continue a previous_response_id or conversation); got ${describe(origin.input)}.`
      : err.message.split(err.param).join(subject);
  return new GatewayError(err.code, {
    param,
    message,
    status: err.status,
    ...(err.extra ? { extra: err.extra } : {}),
    ...(err.headers ? { headers: err.headers } : {}),
    retryable: err.retryable,
  });
}
