import { describe, expect, it } from 'vitest';
import { clientEmbeddings, estimateEmbeddingTokens } from '../../../../src/core/embeddings/embedding-response.js';
import { GatewayError } from '../../../../src/errors.js';

describe('clientEmbeddings', () => {
  it("replaces only model, keeping the model server's bytes, and charges its prompt tokens", () => {
    const raw = Buffer.from('{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.10000000000000001,-2e-7]}],"model":"sim-embed","usage":{"prompt_tokens":5,"total_tokens":5}}');
    const out = clientEmbeddings(raw, 'text-embedding-3-small', 'hello');
    expect(out.body.toString()).toBe(raw.toString().replace('"sim-embed"', '"text-embedding-3-small"'));
    expect(out.usage).toEqual({ promptTokens: 5, source: 'upstream' });
  });

  it('adds model when the server sent none and estimates usage when it reported none', () => {
    const out = clientEmbeddings(Buffer.from('{"data":[]}'), 'm', ['abcdefgh', 'x']);
    expect(JSON.parse(out.body.toString())).toEqual({ data: [], model: 'm' });
    expect(out.usage).toEqual({ promptTokens: 3, source: 'estimated' });
  });

  it('takes total_tokens when prompt_tokens is missing', () => {
    expect(clientEmbeddings(Buffer.from('{"model":"x","usage":{"total_tokens":9}}'), 'm', 'x').usage).toEqual({ promptTokens: 9, source: 'upstream' });
  });

  it('refuses an answer that is not a JSON object with 500 internal_error', () => {
    for (const text of ['not json', '[1,2]', 'null']) {
      expect(() => clientEmbeddings(Buffer.from(text), 'm', 'x')).toThrow(GatewayError);
    }
  });
});

describe('estimateEmbeddingTokens', () => {
  it('counts 4 UTF-8 bytes a token for text and one token per id', () => {
    expect(estimateEmbeddingTokens('abcde')).toBe(2);
    expect(estimateEmbeddingTokens([1, 2, 3])).toBe(3);
    expect(estimateEmbeddingTokens([[1, 2], [3]])).toBe(3);
    expect(estimateEmbeddingTokens(['é', 'abcd'])).toBe(2);
  });
});
