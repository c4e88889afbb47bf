/**
 * The wire form of a bus message between replicas: `{"from": <sender id>, "message": <BusMessage>}` as
 * JSON. The sender id lets a publisher drop its own messages (Redis delivers them to every subscriber,
 * the publisher's own subscriber included). Decoding checks every field: a message from a replica of
 * another version, or anything else published on the channel, is dropped rather than half-applied.
 */
import type { BusMessage } from '../../core/coordination/bus.js';

export interface BusEnvelope {
  readonly from: string;
  readonly message: BusMessage;
}

export const encodeEnvelope = (envelope: BusEnvelope): string => JSON.stringify(envelope);

type Fields = Record<string, unknown>;

const isObject = (v: unknown): v is Fields => typeof v === 'object' && v !== null && !Array.isArray(v);
const isFiniteNumber = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v);

function messageOf(m: Fields): BusMessage | null {
  switch (m.kind) {
    case 'invalidate':
      return m.what === 'catalog' || m.what === 'router' || m.what === 'all' ? { kind: 'invalidate', what: m.what } : null;
    case 'budget_charge':
      if (typeof m.projectId !== 'string' || typeof m.endpointId !== 'string' || !(m.workspaceId === null || typeof m.workspaceId === 'string')) return null;
      if (!isFiniteNumber(m.tokens) || !isFiniteNumber(m.costNanos) || !isFiniteNumber(m.at)) return null;
      return { kind: 'budget_charge', projectId: m.projectId, endpointId: m.endpointId, workspaceId: m.workspaceId, tokens: m.tokens, costNanos: m.costNanos, at: m.at };
    case 'affinity':
      if (typeof m.key !== 'string' || typeof m.endpointId !== 'string' || !isFiniteNumber(m.at)) return null;
      return { kind: 'affinity', key: m.key, endpointId: m.endpointId, at: m.at };
    default:
      return null;
  }
}

/** null for anything that is not a well-formed envelope. */
export function decodeEnvelope(raw: string): BusEnvelope | null {
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    return null;
  }
  if (!isObject(parsed) || typeof parsed.from !== 'string' || !isObject(parsed.message)) return null;
  const message = messageOf(parsed.message);
  return message ? { from: parsed.from, message } : null;
}
