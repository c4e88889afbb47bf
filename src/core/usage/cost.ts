/**
 * What a turn costs, in exact integer arithmetic (docs: README "Usage and spend").
 *
 * Prices are written in the config as decimal USD (per million tokens, or per second of audio). They are
 * turned once, at start, into whole pico-dollars (1e-12 USD) per token, which every price with at most 6
 * decimals per million tokens (9 per second of audio) is exactly. A turn's cost is then a sum of integer
 * products, times the service-tier multiplier as an exact fraction (flex 5/10, priority 125/100), rounded
 * half up once to whole nano-dollars (1e-9 USD), the ledger's unit. No float ever holds money, so sums
 * cannot drift; the only rounding is that one step per turn, at most half a nano-dollar.
 *
 * Why nano- and not micro-dollars: a short turn on a cheap model costs less than a micro-dollar (20 tokens
 * at $0.02 per million is 0.4 micro-dollars), so rounding each turn to micro-dollars would bill such turns
 * nothing, systematically. Nano-dollars in a 64-bit integer still hold $9.2 billion.
 */
import { AUDIO_TOKENS_PER_SECOND } from '../audio/audio-usage.js';

export const NANOS_PER_CENT = 10_000_000;
const PICO_PER_NANO = 1000;

/** Decimals a price may have: exactly a whole number of pico-dollars per token. */
export const PER_MILLION_DECIMALS = 6;
export const PER_SECOND_DECIMALS = 9;

/** Which side of an audio endpoint's turn is audio, so `audio_per_second` prices that side. */
export type AudioSide = 'prompt' | 'completion';

/** Integer pico-dollars per token. */
export interface TurnPrices {
  /** Per prompt token not served from a cache. */
  readonly input: number;
  /** Per cached prompt token. */
  readonly cachedInput: number;
  /** Per completion token (reasoning tokens are completion tokens, as in the usage object). */
  readonly output: number;
  /** Per audio token (AUDIO_TOKENS_PER_SECOND to the second) on the audio side; null: tokens priced as text. */
  readonly audio: { readonly pico: number; readonly side: AudioSide } | null;
}

export interface TurnQuantities {
  readonly promptTokens: number;
  readonly completionTokens: number;
  readonly cachedTokens: number;
  /** The service-tier multiplier recorded on the turn (0.5, 1, 1.25). */
  readonly tierMultiplier: number;
}

/** The prices block of an endpoint in the config file (USD). */
export interface PriceConfig {
  readonly input_per_million?: number | string | undefined;
  readonly cached_input_per_million?: number | string | undefined;
  readonly output_per_million?: number | string | undefined;
  readonly audio_per_second?: number | string | undefined;
}

const DECIMAL = /^(\d+)(?:\.(\d*))?(?:e([+-]?\d+))?$/i;

/**
 * `value` x 10^decimals as an exact integer, or null when the value has more decimals than that (or is not
 * a non-negative decimal). Numbers are read through their shortest round-trip text, which is what the
 * operator wrote in the YAML file (0.15 stays 0.15, never 0.1499999...).
 */
export function scaledInteger(value: number | string, decimals: number): bigint | null {
  const text = typeof value === 'number' ? String(value) : value.trim();
  const m = DECIMAL.exec(text);
  if (!m) return null;
  const digits = `${m[1] ?? ''}${m[2] ?? ''}`;
  // The position of the decimal point moved by the exponent, counted from the right of `digits`.
  const shift = decimals - (m[2] ?? '').length + Number(m[3] ?? 0);
  if (shift >= 0) return BigInt(digits) * 10n ** BigInt(shift);
  const dropped = digits.slice(digits.length + shift);
  if (!/^0*$/.test(dropped)) return null;
  const kept = digits.slice(0, digits.length + shift);
  return BigInt(kept === '' ? '0' : kept);
}

/** Why a price is refused, or null: for the config's validation message. */
export function priceProblem(value: number | string, decimals: number): string | null {
  if (typeof value === 'number' && !(Number.isFinite(value) && value >= 0)) return 'must be a non-negative number of USD';
  const scaled = scaledInteger(value, decimals);
  if (scaled === null) return `must be a non-negative decimal number of USD with at most ${decimals} decimal places`;
  if (scaled > BigInt(Number.MAX_SAFE_INTEGER)) return 'is too large';
  return null;
}

function pico(value: number | string | undefined, decimals: number, perUnit: bigint): number {
  if (value === undefined) return 0;
  const scaled = scaledInteger(value, decimals);
  if (scaled === null) throw new Error(`invalid price ${String(value)}`);
  // decimals of USD -> pico-USD (12 decimals), then per token.
  return Number((scaled * 10n ** BigInt(12 - decimals)) / perUnit);
}

/**
 * The config's prices as integer pico-dollars per token. `audioSide` is the side of the turn that is audio
 * on the endpoint's kind (transcription and realtime: the prompt; speech: the completion); the config
 * refuses `audio_per_second` on other kinds. A cached price left out is the input price.
 */
export function turnPrices(config: PriceConfig, audioSide: AudioSide | null): TurnPrices {
  const input = pico(config.input_per_million, PER_MILLION_DECIMALS, 1_000_000n);
  const audioPerSecond = config.audio_per_second;
  return {
    input,
    cachedInput: config.cached_input_per_million === undefined ? input : pico(config.cached_input_per_million, PER_MILLION_DECIMALS, 1_000_000n),
    output: pico(config.output_per_million, PER_MILLION_DECIMALS, 1_000_000n),
    audio:
      audioPerSecond === undefined || audioSide === null
        ? null
        : { pico: pico(audioPerSecond, PER_SECOND_DECIMALS, BigInt(AUDIO_TOKENS_PER_SECOND)), side: audioSide },
  };
}

interface Fraction {
  readonly num: number;
  readonly den: number;
}

const tierFractions = new Map<number, Fraction>();

/** The recorded multiplier (a float column) as the exact decimal fraction it was written as: 1.25 = 125/100. */
function tierFraction(multiplier: number): Fraction {
  let f = tierFractions.get(multiplier);
  if (!f) {
    const text = String(multiplier);
    const decimals = /\.(\d+)$/.exec(text)?.[1]?.length ?? 0;
    const scaled = Number.isFinite(multiplier) && multiplier >= 0 ? scaledInteger(text, decimals) : null;
    if (scaled === null || decimals > 9) throw new Error(`cannot price a service-tier multiplier of ${text}`);
    f = { num: Number(scaled), den: 10 ** decimals };
    tierFractions.set(multiplier, f);
  }
  return f;
}

/** round(n / d), halves up, for non-negative integers; exact whatever their size. */
function roundedQuotient(n: bigint, d: bigint): bigint {
  return (2n * n + d) / (2n * d);
}

/**
 * One turn's cost in nano-dollars. Cached tokens are part of the prompt (clamped to it: a server that
 * reports more cached than prompt tokens is not paid for the difference).
 */
export function turnCostNanos(q: TurnQuantities, prices: TurnPrices): number {
  const prompt = Math.max(0, q.promptTokens);
  const completion = Math.max(0, q.completionTokens);
  const cached = Math.min(Math.max(0, q.cachedTokens), prompt);
  const { audio } = prices;
  const promptPico =
    audio?.side === 'prompt' ? BigInt(prompt) * BigInt(audio.pico) : BigInt(prompt - cached) * BigInt(prices.input) + BigInt(cached) * BigInt(prices.cachedInput);
  const completionPico = BigInt(completion) * BigInt(audio?.side === 'completion' ? audio.pico : prices.output);
  const tier = tierFraction(q.tierMultiplier);
  return Number(roundedQuotient((promptPico + completionPico) * BigInt(tier.num), BigInt(tier.den * PICO_PER_NANO)));
}

/** Nano-dollars as a decimal USD string: every digit kept, trailing zeros trimmed to at least cents ("0.00", "1.50", "0.000000401"). */
export function formatUsd(nanos: bigint): string {
  const sign = nanos < 0n ? '-' : '';
  const abs = nanos < 0n ? -nanos : nanos;
  const whole = abs / 1_000_000_000n;
  const fraction = (abs % 1_000_000_000n).toString().padStart(9, '0').replace(/0+$/, '').padEnd(2, '0');
  return `${sign}${whole}.${fraction}`;
}

/** Whole cents, halves up: what the legacy budget alert body carries. */
export function nanosToCents(nanos: number): number {
  return Number(roundedQuotient(BigInt(Math.max(0, Math.round(nanos))), BigInt(NANOS_PER_CENT)));
}
