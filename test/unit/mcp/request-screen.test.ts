/**
 * The MCP request screen (src/mcp/request-screen.ts): each request of a batch pays a unit of the key's
 * class, but a batch the SDK refuses whole (over its 100 messages) must pay nothing (found from outside:
 * 2,000 pings emptied the project's request limit for every key, then got the SDK's 400).
 */
import { describe, expect, it } from 'vitest';
import { screenMessages } from '../../../src/mcp/request-screen.js';

const ping = (id: number) => ({ jsonrpc: '2.0', id, method: 'ping' });

describe('screenMessages', () => {
  it('charges a unit for every request after the first of a batch', async () => {
    let charged = 0;
    const screened = await screenMessages([ping(1), ping(2), ping(3)], async () => (charged++, null));
    expect(charged).toBe(2);
    expect(screened.forward).toHaveLength(3);
  });

  it("passes a batch over the SDK's 100 messages on whole, uncharged and unchecked", async () => {
    let charged = 0;
    const batch = Array.from({ length: 2000 }, (_, i) => ping(i));
    const screened = await screenMessages(batch, async () => (charged++, null));
    expect(charged).toBe(0);
    expect(screened).toEqual({ forward: batch, answered: [] });
  });
});
