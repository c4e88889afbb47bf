/**
 * Enrollment (docs/exec.md "Agent protocol"): what the first message of a connection decides. A join key
 * creates an agent (and mints its agent key, sent once); an agent key enrolls its own agent again, with a
 * manifest that may have changed. The name rules:
 *  - `agent_name_in_use`: the name is held by an agent online now (also: this agent key's agent is
 *    already connected);
 *  - `agent_name_conflict`: the name is held by an agent that is offline, i.e. it belongs to another agent
 *    key (a join key is never that agent's key: a restarted agent reconnects with its agent key).
 * The row and its events (`agent.created` on a first enrollment, `agent.enrolled`, `exec.agent_enrolled`)
 * are written in one transaction (core/store/exec-agents-store.ts). The checks read first; the write is
 * guarded by the live-name index, so a name taken in between (another replica's enrollment) is refused
 * as `agent_name_in_use`, and a key revoked in between is refused at the next connection.
 *
 * `description` and `workspace_ids` of the enroll message are taken at the first enrollment only; later,
 * they are the operator's (PATCH): an agent key must not be able to widen the workspaces its agent serves.
 */
import type { ExecAgentsStore } from '../../core/store/exec-agents-store.js';
import { agentEvents } from './agent-events.js';
import { hashCredential, mintAgentKey, newAgentId } from './credentials.js';
import type { SchemaCheckOutput } from '../../pool/tasks.js';
import { manifestHash, parseEnroll, schemaRefusal, type EnrollMessage } from './manifest.js';
import { CLOSE, type ProtocolErrorCode } from './protocol.js';
import type { AgentRecord, JoinKeyRecord } from './records.js';

export type Credential =
  | { readonly kind: 'join_key'; readonly joinKey: JoinKeyRecord; readonly keyHash: string }
  | { readonly kind: 'agent_key'; readonly agent: AgentRecord; readonly keyHash: string };

export type EnrollOutcome =
  | { readonly ok: false; readonly code: ProtocolErrorCode; readonly message: string; readonly closeCode: number }
  | { readonly ok: true; readonly agent: AgentRecord; readonly agentKey: string | null };

export interface EnrollmentDeps {
  readonly store: ExecAgentsStore;
  readonly isOnline: (agentId: string) => boolean;
  /** Workspace ids of the project (live ones). */
  readonly workspaceIds: (projectId: string) => ReadonlySet<string>;
  readonly projectUuid: (projectId: string) => string;
  readonly now: () => number;
  /**
   * Compiles the manifest's schemas off the event loop (src/pool/schema-pool.ts): the first that cannot
   * be used and why, or null; rejects with `{name: 'SchemaDeadlineError'}` when compiling took too long.
   * `tenant` is the project id: the project's manifests take turns with other projects', never hold them.
   */
  readonly checkSchemas: (schemas: readonly Record<string, unknown>[], tenant: string) => Promise<SchemaCheckOutput>;
}

const refuse = (code: ProtocolErrorCode, message: string, closeCode: number = CLOSE.protocolError): EnrollOutcome => ({ ok: false, code, message, closeCode });

export function createEnrollment(deps: EnrollmentDeps): (projectId: string, credential: Credential, raw: unknown) => Promise<EnrollOutcome> {
  const { store } = deps;

  /** The credential as stored now: it may have been revoked (the agent deleted, its key rotated) since the upgrade. */
  async function fresh(projectId: string, c: Credential): Promise<JoinKeyRecord | AgentRecord | null> {
    if (c.kind === 'join_key') {
      const key = await store.findJoinKey(projectId, c.joinKey.id);
      return key?.revokedAt === null ? key : null;
    }
    const agent = await store.findAgentByHash(c.keyHash);
    return agent !== null && agent.id === c.agent.id && agent.deletedAt === null ? agent : null;
  }

  async function nameTaken(projectId: string, name: string, self: string | null): Promise<EnrollOutcome | null> {
    const holder = await store.findLiveAgentByName(projectId, name);
    if (!holder || holder.id === self) return null;
    if (deps.isOnline(holder.id)) return refuse('agent_name_in_use', `The registration name ${name} is held by agent ${holder.id}, online now.`);
    return refuse(
      'agent_name_conflict',
      `The registration name ${name} belongs to agent ${holder.id}, enrolled with another key: reconnect with that agent's key, or delete it first.`,
    );
  }

  async function create(projectId: string, joinKey: JoinKeyRecord, m: EnrollMessage): Promise<EnrollOutcome> {
    const known = deps.workspaceIds(projectId);
    const unknown = (m.workspaceIds ?? []).find((w) => !known.has(w));
    if (unknown !== undefined) return refuse('exec_manifest_invalid', `workspace_ids: ${unknown} is not a workspace of project ${projectId}.`);
    const taken = await nameTaken(projectId, m.registrationName, null);
    if (taken) return taken;
    const now = deps.now();
    const agent: AgentRecord = {
      id: newAgentId(),
      projectId,
      registrationName: m.registrationName,
      description: m.description ?? null,
      workspaceIds: [...new Set(m.workspaceIds ?? [])],
      joinKeyId: joinKey.id,
      manifest: m.manifest,
      manifestHash: manifestHash(m.manifest),
      createdAt: now,
      enrolledAt: now,
      lastSeenAt: now,
      updatedAt: now,
      deletedAt: null,
    };
    const agentKey = mintAgentKey();
    if (!(await store.insertAgent(agent, hashCredential(agentKey), [agentEvents.created(agent), ...enrolledEvents(agent)]))) {
      return refuse('agent_name_in_use', `The registration name ${m.registrationName} was just taken.`);
    }
    return { ok: true, agent, agentKey };
  }

  async function reenroll(projectId: string, existing: AgentRecord, m: EnrollMessage): Promise<EnrollOutcome> {
    if (deps.isOnline(existing.id)) return refuse('agent_name_in_use', `Agent ${existing.id} (${existing.registrationName}) is already connected.`);
    const taken = await nameTaken(projectId, m.registrationName, existing.id);
    if (taken) return taken;
    const now = deps.now();
    const agent: AgentRecord = {
      ...existing,
      registrationName: m.registrationName,
      manifest: m.manifest,
      manifestHash: manifestHash(m.manifest),
      enrolledAt: now,
      lastSeenAt: now,
      updatedAt: now,
    };
    if (!(await store.enrolled(agent, enrolledEvents(agent)))) return refuse('agent_name_in_use', `The registration name ${m.registrationName} was just taken.`);
    return { ok: true, agent, agentKey: null };
  }

  /** The refusal of a schema that cannot be compiled (or takes too long to), or null. */
  async function compiled(projectId: string, m: EnrollMessage): Promise<EnrollOutcome | null> {
    const { tools } = m.manifest;
    try {
      const bad = await deps.checkSchemas(tools.map((t) => t.input_schema), projectId);
      return bad === null ? null : refuse('exec_manifest_invalid', schemaRefusal(tools, bad.index, bad.problem));
    } catch (err) {
      if ((err as Error).name !== 'SchemaDeadlineError') throw err;
      return refuse('exec_manifest_invalid', `manifest: compiling the input_schemas ${(err as Error).message}; send smaller schemas.`);
    }
  }

  const enrolledEvents = (agent: AgentRecord) => [agentEvents.enrolled(agent), agentEvents.execEnrolled(agent, deps.projectUuid(agent.projectId))];

  return async (projectId, credential, raw) => {
    const check = parseEnroll(raw);
    if (!check.ok) return refuse('exec_manifest_invalid', check.message);
    const schemas = await compiled(projectId, check.message);
    if (schemas) return schemas;
    const current = await fresh(projectId, credential);
    if (current === null) return refuse('key_revoked', 'The key this connection presented is no longer valid.', CLOSE.keyRevoked);
    return 'registrationName' in current ? reenroll(projectId, current, check.message) : create(projectId, current, check.message);
  };
}
