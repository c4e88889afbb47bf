import { mix32 } from './hash.js';
import { alternativeTokens } from './text-generation.js';

// Synthetic logprobs in OpenAI's shape. Values are fixed functions of the
// token position so tests can assert them and streamed/non-streamed agree.

export interface TopLogprob {
  token: string;
  logprob: number;
  bytes: number[];
}

export interface LogprobEntry extends TopLogprob {
  top_logprobs: TopLogprob[];
}

function logprobFor(i: number, rank: number): number {
  // Integer arithmetic first so values print cleanly (-0.03, not -0.030000000000000002).
  return -((i % 7) + 1 + rank * 50) / 100;
}

function bytesOf(token: string): number[] {
  return Array.from(Buffer.from(token, 'utf8'));
}

export function buildLogprobs(tokens: readonly string[], topLogprobs: number, seed: number): LogprobEntry[] {
  return tokens.map((token, i) => {
    const logprob = logprobFor(i, 0);
    const top: TopLogprob[] = [];
    if (topLogprobs > 0) {
      top.push({ token, logprob, bytes: bytesOf(token) });
      alternativeTokens(token, mix32(seed, i), topLogprobs - 1).forEach((alt, rank) => {
        top.push({ token: alt, logprob: logprobFor(i, rank + 1), bytes: bytesOf(alt) });
      });
    }
    return { token, logprob, bytes: bytesOf(token), top_logprobs: top };
  });
}
