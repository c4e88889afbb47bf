/**
 * The stored records of the agents' side (join keys, enrolled agents), declared in core so the storage
 * port (core/store/exec-agents-store.ts) can name them. Times: Unix ms.
 */
import type { ExecTool } from './agent-registry.js';

export interface JoinKeyRecord {
  readonly id: string;
  readonly projectId: string;
  readonly name: string | null;
  readonly createdAt: number;
  readonly revokedAt: number | null;
}

export interface Manifest {
  readonly tools: readonly ExecTool[];
}

export interface AgentRecord {
  readonly id: string;
  readonly projectId: string;
  readonly registrationName: string;
  readonly description: string | null;
  /** Empty: every workspace of the project. */
  readonly workspaceIds: readonly string[];
  readonly joinKeyId: string;
  readonly manifest: Manifest;
  readonly manifestHash: string;
  readonly createdAt: number;
  readonly enrolledAt: number;
  /** As of the last enrollment or disconnection; an online agent's live value is in the registry. */
  readonly lastSeenAt: number;
  readonly updatedAt: number;
  readonly deletedAt: number | null;
}
