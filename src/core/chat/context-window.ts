/**
 * Does input plus requested output fit the model's context window? (SPEC "max_tokens", Passthrough rule 5.)
 *
 * The fast path never tokenizes: for byte-level BPE tokenizers a token covers at least one byte, so the
 * UTF-8 byte count of the input is an upper bound on its tokens. Only requests near or over the window are
 * counted exactly, with tiktoken in the worker pool (BASELINE.md: 40 ms for 216k characters, which must
 * never run on the event loop).
 *
 * "Clearly exceeds": our tokenizer is not the model's, so a refusal needs the count to exceed the window
 * by more than COUNT_TOLERANCE; borderline requests go upstream, whose own overflow error maps to the
 * same code. Clamping, in contrast, over-estimates input (SPEC: "the estimate is conservative").
 */
import { GatewayError } from '../../errors.js';

export interface ContextInput {
  readonly messages: readonly { readonly content?: unknown; readonly name?: unknown; readonly tool_calls?: unknown }[];
  readonly tools?: unknown;
  readonly max_tokens?: number | null | undefined;
  readonly max_completion_tokens?: number | null | undefined;
}

/** The texts' token counts; once their total passes `stopAbove`, the rest may be left uncounted. */
export type CountTokens = (texts: string[], stopAbove: number) => Promise<number[]>;

export interface ContextVerdict {
  /** Exact-ish input count, or null when the byte bound already proved the request fits. */
  readonly inputTokens: number | null;
  /** Set when clamping lowered the in-effect maximum: which field to replace and its new value. */
  readonly clamp: { readonly field: 'max_tokens' | 'max_completion_tokens'; readonly value: number } | null;
}

/** Tokens of chat framing per message, and per request (role markers, separators). */
const PER_MESSAGE = 4;
const PER_REQUEST = 3;
/** Images are not text: a fixed allowance per image part (a high-detail 512px tile set). */
const PER_IMAGE = 768;
const COUNT_TOLERANCE = 0.9;
const CLAMP_MARGIN = 1.1;

interface Part {
  readonly type?: unknown;
  readonly text?: unknown;
}

/** The texts the model reads, plus a token allowance for parts that are not text. */
export function inputOf(req: ContextInput): { texts: string[]; fixedTokens: number } {
  const texts: string[] = [];
  let fixedTokens = PER_REQUEST;
  for (const m of req.messages) {
    fixedTokens += PER_MESSAGE;
    if (typeof m.content === 'string') texts.push(m.content);
    else if (Array.isArray(m.content)) {
      for (const part of m.content as Part[]) {
        if (typeof part.text === 'string') texts.push(part.text);
        else if (part.type === 'image_url' || part.type === 'video_url' || part.type === 'input_audio') fixedTokens += PER_IMAGE;
      }
    }
    if (typeof m.name === 'string') texts.push(m.name);
    if (m.tool_calls) texts.push(JSON.stringify(m.tool_calls));
  }
  if (req.tools) texts.push(JSON.stringify(req.tools));
  return { texts, fixedTokens };
}

interface RequestedOutput {
  readonly field: 'max_tokens' | 'max_completion_tokens';
  readonly value: number;
}

function requestedOutput(req: ContextInput): RequestedOutput | null {
  if (typeof req.max_completion_tokens === 'number') return { field: 'max_completion_tokens', value: req.max_completion_tokens };
  if (typeof req.max_tokens === 'number') return { field: 'max_tokens', value: req.max_tokens };
  return null;
}

const FITS: ContextVerdict = Object.freeze({ inputTokens: null, clamp: null });

/** Synchronous when the byte bound settles it (no tokenizing, so nothing to wait for). */
export function checkContextWindow(req: ContextInput, window: number, countTokens: CountTokens, clamp: boolean): ContextVerdict | Promise<ContextVerdict> {
  const { texts, fixedTokens } = inputOf(req);
  const output = requestedOutput(req);
  let upperBound = fixedTokens;
  for (const t of texts) upperBound += Buffer.byteLength(t);
  if (upperBound + (output?.value ?? 0) <= window) return FITS;
  return countedVerdict(texts, fixedTokens, output, window, countTokens, clamp);
}

async function countedVerdict(
  texts: string[],
  fixedTokens: number,
  output: RequestedOutput | null,
  window: number,
  countTokens: CountTokens,
  clamp: boolean,
): Promise<ContextVerdict> {
  // Past twice the window every verdict below is already decided (refusal needs 1/COUNT_TOLERANCE of it).
  const stopAbove = 2 * window;
  const counts = await countTokens(texts, stopAbove);
  const input = counts.reduce((a, b) => a + b, fixedTokens);
  const about = input > stopAbove ? 'over' : 'about';
  if (clamp && output) {
    const room = Math.max(1, window - Math.ceil(input * CLAMP_MARGIN));
    return { inputTokens: input, clamp: output.value > room ? { field: output.field, value: room } : null };
  }
  const left = Math.max(0, window - input);
  if (output && input * COUNT_TOLERANCE + output.value > window) {
    throw new GatewayError('context_length_exceeded', {
      param: 'max_tokens',
      message:
        `The model's context window is ${window} tokens. The input is ${about} ${input} tokens, which leaves ${left} for output, ` +
        `but ${output.field} asks for ${output.value}. Lower ${output.field}, shorten the input, or opt into clamping with X-Service-Augment-Max-Output-Tokens-Clamp: on.`,
    });
  }
  if (!output && input * COUNT_TOLERANCE > window) {
    throw new GatewayError('context_length_exceeded', {
      param: 'messages',
      message: `The model's context window is ${window} tokens and the input alone is ${about} ${input} tokens. Shorten the input.`,
    });
  }
  return { inputTokens: input, clamp: null };
}
