/**
 * The invocations' service over a real in-memory store and outbox, with an agent registry the test
 * drives (agents online or not, dispatches accepted or refused) and a clock it moves.
 */
import { randomBytes } from 'node:crypto';
import type { AgentRegistry, AgentReports, DispatchMessage, ExecTool, OnlineAgent, ToolRisk } from '../../../src/core/exec/agent-registry.js';
import type { ApprovalPolicy } from '../../../src/core/exec/approval-machine.js';
import { invocationIds } from '../../../src/core/exec/invocation-ids.js';
import { inProcessValidator } from '../../../src/core/exec/schema-compiler.js';
import type { ExecInvocationsStore } from '../../../src/core/store/exec-invocations-store.js';
import { InvocationService } from '../../../src/exec/invocations/invocation-service.js';
import { EVENT_TYPES } from '../../../src/core/webhooks/event-types.js';
import { openDatabase, type Db } from '../../../src/store/db.js';
import { createSecretBox } from '../../../src/store/secret-box.js';
import { createExecInvocationsStore } from '../../../src/store/exec-invocations/exec-invocations-store.js';
import { createSqliteRunner } from '../../../src/store/sql/sqlite-runner.js';
import { sqliteTransactionEvents } from '../../../src/store/sql/transaction-events.js';
import { createOutbox } from '../../../src/store/webhooks/webhook-outbox.js';
import { webhookEndpointPrograms } from '../../../src/store/webhooks/webhook-endpoints-store.js';

export const PROJECT = 'proj_a';
export const WS = 'ws_0a';
export const T0 = Date.UTC(2026, 0, 1, 12, 0, 0);

export function tool(name: string, risk: ToolRisk = 'read', input_schema: Record<string, unknown> = { type: 'object' }): ExecTool {
  return { name, description: `the ${name} tool`, input_schema, risk, mcp_visible: true };
}

export class FakeRegistry implements AgentRegistry {
  agents: OnlineAgent[] = [];
  readonly sent: { agentId: string; message: DispatchMessage }[] = [];
  readonly cancelled: { agentId: string; invocationId: string }[] = [];
  /** Dispatches answered false (the agent went away between the choice and the send). */
  refuse = false;
  reports: AgentReports | null = null;

  add(id: string, tools: ExecTool[], workspaceIds: string[] = []): void {
    this.agents.push({ id, projectId: PROJECT, registrationName: id, workspaceIds, tools: new Map(tools.map((t) => [t.name, t])), running: 0 });
  }

  remove(id: string): void {
    this.agents = this.agents.filter((a) => a.id !== id);
  }

  candidates(projectId: string, workspaceId: string, toolName: string): readonly OnlineAgent[] {
    return this.online(projectId, workspaceId).filter((a) => a.tools.has(toolName));
  }

  online(projectId: string, workspaceId: string | null): readonly OnlineAgent[] {
    return this.agents.filter((a) => a.projectId === projectId && (workspaceId === null || a.workspaceIds.length === 0 || a.workspaceIds.includes(workspaceId)));
  }

  dispatch(agentId: string, message: DispatchMessage): boolean {
    if (this.refuse) return false;
    this.sent.push({ agentId, message });
    return true;
  }

  cancel(agentId: string, invocationId: string): void {
    this.cancelled.push({ agentId, invocationId });
  }

  subscribe(reports: AgentReports): void {
    this.reports = reports;
  }
}

export interface Fixture {
  readonly db: Db;
  /** The port the service uses (store/exec-invocations/exec-invocations-store.ts on SQLite); tests may wrap its methods. */
  readonly port: ExecInvocationsStore;
  readonly registry: FakeRegistry;
  readonly service: InvocationService;
  /** Moves the clock forward. */
  advance(ms: number): void;
  now(): number;
  /** Every event written to the outbox so far, in order: [type, data]. */
  events(): [string, Record<string, unknown>][];
}

/** `owner`: the gateway instance id the store records on what it dispatches (two fixtures on one file are two instances). */
export function execFixture(options: { policy?: ApprovalPolicy; capBytes?: number; db?: Db; path?: string; owner?: string } = {}): Fixture {
  const db = options.db ?? openDatabase(options.path ?? ':memory:');
  if (!db.prepare('SELECT 1 FROM projects WHERE id = ?').get(PROJECT)) {
    db.prepare(`INSERT INTO projects (id, uuid, slug, name, plan, requests_per_minute, tokens_per_minute, created_at, updated_at) VALUES (?, 'u-a', 'a', 'A', 'paid', 0, 0, 0, 0)`).run(PROJECT);
    const all = Object.keys(EVENT_TYPES).filter((t) => t.startsWith('exec.'));
    const endpoints = webhookEndpointPrograms('sqlite', createSecretBox(randomBytes(32)));
    createSqliteRunner(db).writeSync(endpoints.insertCapped({ id: 'wh_1', projectId: PROJECT, url: 'https://93.184.216.34/', description: null, events: all, isActive: true, metadata: {}, createdAt: 1, updatedAt: 1 }, 'whsec_x', 20));
  }
  let clock = T0;
  const now = (): number => clock;
  const port = createExecInvocationsStore({ runner: createSqliteRunner(db), events: sqliteTransactionEvents(createOutbox(db, { now })), owner: options.owner ?? null, now });
  const registry = new FakeRegistry();
  const service = new InvocationService({
    store: port,
    registry,
    argumentsValidator: inProcessValidator(),
    now,
    ids: invocationIds,
    policyOf: () => options.policy ?? { approvalRequiredTools: ['deploy'], chain: [{ target: 'operators', timeoutMs: 900_000 }] },
    outputCapBytes: options.capBytes ?? 64 * 1024,
  });
  registry.subscribe(service);
  return {
    db,
    port,
    registry,
    service,
    advance: (ms) => {
      clock += ms;
    },
    now,
    events: () =>
      (db.prepare('SELECT type, body FROM webhook_events ORDER BY rowid').all() as { type: string; body: string }[]).map((r) => [
        r.type,
        (JSON.parse(r.body) as { data: Record<string, unknown> }).data,
      ]),
  };
}
