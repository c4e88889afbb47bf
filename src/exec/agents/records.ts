/** The agents' side's records, which are core's (the store's port: core/store/exec-agents-store.ts). */
export type { AgentRecord, JoinKeyRecord, Manifest } from '../../core/exec/agent-records.js';
