/**
 * Authentication of `WS /{project}/v1/exec/agents/connect` (docs/exec.md "Agent protocol"): the upgrade
 * carries `Authorization: Bearer <join key or agent key>`, refused with the HTTP error envelope before
 * the upgrade, in the order of SPEC Authentication 5 (401 before 403): no key, a malformed or unknown
 * one, a revoked join key or the key of a deleted agent (401), then a key of another project (403
 * project_mismatch, naming the key's project as API keys do). API keys are not accepted here: an agent
 * is not a caller of the API.
 */
import type { ProjectRecord } from '../../core/records.js';
import { GatewayError } from '../../errors.js';
import { credentialKind, hashCredential } from './credentials.js';
import type { Credential } from './enrollment.js';
import type { ExecAgentsStore } from '../../core/store/exec-agents-store.js';

export interface ConnectAuthDeps {
  readonly store: Pick<ExecAgentsStore, 'findAgentByHash' | 'findJoinKeyByHash'>;
  readonly project: (ref: string) => ProjectRecord | null;
}

const BEARER = /^Bearer +(\S+) *$/i;

export async function authenticateAgentConnection(deps: ConnectAuthDeps, authorization: string | undefined, projectRef: string): Promise<{ project: ProjectRecord; credential: Credential }> {
  if (authorization === undefined || authorization.trim() === '') {
    throw new GatewayError('authentication_required', { message: 'Send Authorization: Bearer <join key or agent key> on the upgrade request.' });
  }
  const value = BEARER.exec(authorization)?.[1];
  const kind = value === undefined ? null : credentialKind(value);
  if (value === undefined || kind === null) {
    throw new GatewayError('invalid_api_key', { message: 'Agents authenticate with a join key (sjk_...) or an agent key (sak_...): Authorization: Bearer <key>.' });
  }
  const keyHash = hashCredential(value);
  let credential: Credential;
  let owner: string;
  if (kind === 'join_key') {
    const joinKey = await deps.store.findJoinKeyByHash(keyHash);
    if (!joinKey) throw new GatewayError('invalid_api_key', { message: 'The join key is not valid: no such key.' });
    if (joinKey.revokedAt !== null) throw new GatewayError('key_revoked', { message: `The join key ${joinKey.id} was revoked.` });
    credential = { kind, joinKey, keyHash };
    owner = joinKey.projectId;
  } else {
    const agent = await deps.store.findAgentByHash(keyHash);
    // A rotated-out key is no longer stored anywhere: it reads as unknown.
    if (!agent) throw new GatewayError('invalid_api_key', { message: 'The agent key is not valid: no such key (a rotated key stops at once).' });
    if (agent.deletedAt !== null) throw new GatewayError('key_revoked', { message: `The agent ${agent.id} of this key was deleted.` });
    credential = { kind, agent, keyHash };
    owner = agent.projectId;
  }
  const project = deps.project(projectRef);
  if (!project || project.id !== owner) {
    throw new GatewayError('project_mismatch', { message: `The key does not belong to project ${projectRef}; it belongs to ${owner}: connect to /${owner}/v1/exec/agents/connect.` });
  }
  return { project, credential };
}
