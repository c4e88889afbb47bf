/**
 * Config and helpers for the execution surface's API tests: the standard test project (configs.ts) with
 * an operational workspace whose approvals run through a three-stage chain, keys with the `execution`
 * scope (one confined to a workspace), and a join key minted through the management route.
 */
import { expect } from 'vitest';
import { makeKeys, OTHER_PROJECT, PROJECT, testConfig, WS_B, WS_DEFAULT, type TestKeys } from './configs.js';
import { call } from './http.js';
import { mintTestKey } from './processes.js';

export { OTHER_PROJECT, PROJECT, WS_B, WS_DEFAULT };
/** Operational workspace: `deploy` needs an approval; the chain escalates oncall -> leads -> cto. */
export const WS_OPS = 'ws_0e0e0e';
export const OPS_CHAIN = [
  { target: 'oncall', timeout_ms: 60_000 },
  { target: 'leads', timeout_ms: 120_000 },
  { target: 'cto', timeout_ms: 240_000 },
];
/** Nothing listens there: exec tests never call a model. */
export const NO_UPSTREAM = 'http://127.0.0.1:9';

export interface ExecKeys extends TestKeys {
  /** execution + management (mints join keys, subscribes webhooks). */
  readonly exec: string;
  /**
   * execution + management, no user: a privileged key that decides approvals another key asked for (no
   * principal decides its own: docs/exec.md "Who decides").
   */
  readonly approver: string;
  readonly execOnly: string;
  /** execution, confined to WS_B. */
  readonly execConfined: string;
  readonly otherExec: string;
}

export function makeExecKeys(): ExecKeys {
  return { ...makeKeys(), exec: mintTestKey('test'), approver: mintTestKey('test'), execOnly: mintTestKey('test'), execConfined: mintTestKey('test'), otherExec: mintTestKey('other') };
}

export interface ExecConfigOptions {
  /** config `exec` (lease_ms, default_timeout_ms, output_cap_bytes). */
  readonly exec?: Record<string, unknown>;
  /** Webhook deliveries to a local receiver over plain HTTP. */
  readonly webhooks?: boolean;
}

type Project = { workspaces: Record<string, unknown>[]; keys: Record<string, unknown>[] };

export function execConfig(keys: ExecKeys, options: ExecConfigOptions = {}) {
  const base = testConfig(NO_UPSTREAM, keys, {
    extraKeys: [
      { value: keys.exec, scopes: ['execution', 'management'] },
      { value: keys.approver, scopes: ['execution', 'management'] },
      { value: keys.execOnly, scopes: ['execution'] },
      { value: keys.execConfined, scopes: ['execution'], allowed_workspace_ids: [WS_B] },
    ],
    ...(options.webhooks ? { security: { allow_private_targets: true, allow_http_targets: true }, webhooks: { poll_interval_ms: 50 } } : {}),
  });
  const [main, other] = base.projects as unknown as [Project, Project];
  main.workspaces.push({ id: WS_OPS, name: 'Ops', operational: true, exec: { approval_required_tools: ['deploy'], approval_chain: OPS_CHAIN } });
  other.keys.push({ value: keys.otherExec, scopes: ['execution', 'management'] });
  return { ...base, exec: { lease_ms: 30_000, ...options.exec } };
}

/** A join key of PROJECT (or another project), minted with a management key. */
export async function mintJoinKey(gatewayUrl: string, managementKey: string, project = PROJECT): Promise<string> {
  const res = await call(`${gatewayUrl}/${project}/v1/management/exec/join-keys`, { key: managementKey, body: { name: 'test' } });
  expect(res.status).toBe(201);
  return (res.body as { value: string }).value;
}

/** Polls until `check` returns a value (the gateway's clock polls every 100 ms). */
export async function eventually<T>(check: () => Promise<T | null | undefined | false>, what: string, timeoutMs = 5000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`never happened: ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}
