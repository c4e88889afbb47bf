import { describe, expect, it } from 'vitest';
import sign from '../../../workers/sign.js';
import { computeSignature, verifyWebhook } from '../../../src/webhooks-verify.js';

describe('workers/sign', () => {
  it('signs every item of a batch, in order, as sha256=<hex>', () => {
    const items = [
      { secret: 'whsec_a', timestamp: 1_700_000_000, body: '{"n":1}' },
      { secret: 'whsec_b', timestamp: 1_700_000_001, body: '{"n":2,"text":"é\\u2028"}' },
      { secret: 'whsec_a', timestamp: 1_700_000_002, body: '' },
    ];
    const out = sign({ items });
    expect(out).toHaveLength(3);
    out.forEach((signature, i) => {
      const item = items[i]!;
      expect(signature).toMatch(/^sha256=[0-9a-f]{64}$/);
      expect(signature).toBe(computeSignature(item.secret, item.timestamp, item.body));
    });
  });

  it('produces signatures the receivers verify function accepts', () => {
    const body = '{"id":"evt_1","object":"event"}';
    const [signature = ''] = sign({ items: [{ secret: 'whsec_x', timestamp: 1_700_000_000, body }] });
    const result = verifyWebhook('whsec_x', body, { 'x-webhook-timestamp': '1700000000', 'x-webhook-signature': signature }, { now: 1_700_000_000 });
    expect(result.ok).toBe(true);
  });

  it('answers an empty batch with an empty list', () => {
    expect(sign({ items: [] })).toEqual([]);
  });
});
