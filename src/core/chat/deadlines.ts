/**
 * SPEC "Timeouts by service tier": a request deadline and an idle-stream timeout per endpoint tier, not
 * client-configurable. With reasoning_effort set, the idle timeout equals the request deadline (a model
 * may think silently for a long time before its first delta).
 */
import type { EndpointConfig, TimeoutOverrides } from '../../config.js';

export interface Deadlines {
  readonly requestMs: number;
  readonly idleMs: number;
}

const TIER_DEADLINES: Record<EndpointConfig['tier'], Deadlines> = {
  free: { requestMs: 30_000, idleMs: 120_000 },
  cpu: { requestMs: 300_000, idleMs: 600_000 },
  gpu: { requestMs: 300_000, idleMs: 600_000 },
  self_hosted: { requestMs: 1_800_000, idleMs: 3_600_000 },
};

export function deadlinesFor(tier: EndpointConfig['tier'], overrides: TimeoutOverrides, reasoningEffortSet: boolean): Deadlines {
  const o = overrides[tier];
  const base = o ? { requestMs: o.request_ms, idleMs: o.idle_ms } : TIER_DEADLINES[tier];
  return reasoningEffortSet ? { requestMs: base.requestMs, idleMs: base.requestMs } : base;
}
