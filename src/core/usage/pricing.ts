/**
 * Each endpoint's model and prices, from the config file, for the charging layer (store/charging-ledger.ts)
 * to record on every turn: the model that served it and what it cost, both as they were at that moment.
 */
import type { Config, EndpointConfig } from '../../config.js';
import { turnPrices, type AudioSide, type TurnPrices } from './cost.js';

export interface EndpointPricing {
  /** The endpoint's public model id (what /v1/models lists). */
  readonly model: string;
  /** null: the endpoint has no `prices`; its turns are recorded with no cost. */
  readonly prices: TurnPrices | null;
}

export type PricingLookup = (endpointId: string) => EndpointPricing | undefined;

/** The side of a turn that is audio, by endpoint kind (docs/decisions.md "Audio accounting"); null: none. */
export function audioSideOf(kind: EndpointConfig['kind']): AudioSide | null {
  switch (kind) {
    case 'transcription':
    case 'realtime':
      return 'prompt';
    case 'speech':
      return 'completion';
    default:
      return null;
  }
}

export function pricingFromConfig(config: Config): PricingLookup {
  const byEndpoint = new Map<string, EndpointPricing>();
  for (const p of config.projects) {
    for (const e of p.endpoints) {
      byEndpoint.set(e.id, { model: e.model.id, prices: e.prices ? turnPrices(e.prices, audioSideOf(e.kind)) : null });
    }
  }
  return (endpointId) => byEndpoint.get(endpointId);
}
