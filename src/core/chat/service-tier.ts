/**
 * The billing lane of a request (SPEC "Chat completion request (body)", `service_tier`). The lane only
 * changes priority and price: routing stays bound to the endpoint's configured tier, and an unknown
 * value is never refused.
 */

export type ServiceLane = 'flex' | 'default' | 'priority';

export interface ServiceTier {
  lane: ServiceLane;
  multiplier: 0.5 | 1 | 1.25;
}

/** Exact, case-sensitive match on SPEC's values: anything else (auto, scale, FLEX, 7) is default. */
export function resolveServiceTier(requested: unknown): ServiceTier {
  if (requested === 'flex') return { lane: 'flex', multiplier: 0.5 };
  if (requested === 'priority') return { lane: 'priority', multiplier: 1.25 };
  return { lane: 'default', multiplier: 1 };
}
