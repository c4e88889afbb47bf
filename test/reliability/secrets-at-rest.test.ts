/**
 * No key value, webhook secret, join key or agent key ever reaches the database file or the logs: keys
 * are stored as hashes, secrets sealed, and log lines carry ids only. The test mints one of each through
 * the public surface, uses them, stops the gateway (so every buffered row and line is written), then
 * searches every byte of the store (main file and WAL) and everything the process printed.
 */
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { PROJECT } from '../helpers/configs.js';
import { execConfig, makeExecKeys, mintJoinKey } from '../helpers/exec-config.js';
import { enroll, isRefused, openAgentSocket } from '../helpers/exec-agents.js';
import { call } from '../helpers/http.js';
import { startGatewayProcess } from '../helpers/processes.js';

describe('secrets at rest', () => {
  it('keeps every key value and secret out of the store and the logs', async () => {
    const keys = makeExecKeys();
    const gw = await startGatewayProcess(execConfig(keys, { webhooks: true }), { env: { SWITCHBOARD_LOG_LEVEL: 'debug' } });
    const secrets: string[] = [keys.full, keys.exec, keys.managementOnly];
    try {
      const minted = await call(`${gw.url}/${PROJECT}/v1/management/api-keys`, { key: keys.full, body: { name: 'minted', scopes: ['inference'] } });
      expect(minted.status).toBe(201);
      const mintedValue = (minted.body as { value: string; id: string }).value;
      secrets.push(mintedValue);
      const rotated = await call(`${gw.url}/${PROJECT}/v1/management/api-keys/${(minted.body as { id: string }).id}/rotate`, { method: 'POST', key: keys.full });
      secrets.push((rotated.body as { value: string }).value);
      const webhook = await call(`${gw.url}/${PROJECT}/v1/webhooks`, { key: keys.full, body: { url: 'https://8.8.8.8/hook', events: ['exec.completed'] } });
      expect(webhook.status).toBe(201);
      secrets.push((webhook.body as { secret: string }).secret);
      const joinKey = await mintJoinKey(gw.url, keys.exec);
      secrets.push(joinKey);
      const agent = await openAgentSocket(`${gw.url.replace(/^http/, 'ws')}/${PROJECT}/v1/exec/agents/connect`, joinKey);
      if (isRefused(agent)) throw new Error(`the agent was refused: ${JSON.stringify(agent.body)}`);
      agent.send(enroll('secrets-test'));
      const enrolled = await agent.next('enrolled');
      secrets.push(String(enrolled.agent_key));
      agent.ws.close();
      // Every key used once, one of them wrongly (a refused key must not be logged either).
      for (const key of [keys.full, mintedValue, `${keys.full}x`]) {
        await call(`${gw.url}/${PROJECT}/chat/v1/chat/completions`, { key, body: { model: 'm', messages: [{ role: 'user', content: 'hi' }] } });
      }
    } finally {
      expect(await gw.stop()).toBe(0);
    }
    const stored = [gw.dbPath, `${gw.dbPath}-wal`].filter(existsSync).map((p) => readFileSync(p).toString('latin1')).join('\n');
    const printed = gw.stdout.join('') + gw.stderr.join('');
    // The search reads the real rows: the bootstrap key's hash is there, as the key's only trace.
    expect(stored).toContain(createHash('sha256').update(keys.full).digest('hex'));
    expect(printed).toContain('"msg":"request"');
    for (const secret of secrets) {
      expect(secret.length).toBeGreaterThan(20);
      // The random part alone: a prefix like svc_test_ is public.
      const randomPart = secret.slice(-30);
      expect({ secret: secret.slice(0, 8), inStore: stored.includes(randomPart) }).toEqual({ secret: secret.slice(0, 8), inStore: false });
      expect({ secret: secret.slice(0, 8), inLogs: printed.includes(randomPart) }).toEqual({ secret: secret.slice(0, 8), inLogs: false });
    }
  });
});
