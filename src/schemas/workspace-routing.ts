/**
 * PATCH /{project}/v1/management/workspaces/{workspace_id} (SPEC Semantic router behaviour 9): flat and
 * strict. `inference_routing_mode`: omitted unchanged, a mode sets it, null clears it, anything else is a
 * 400 naming it. Setting `semantic` or null also drops the pinned endpoint, so sending a pin in the same
 * body contradicts itself and is refused.
 */
import { z } from 'zod';
import { GatewayError } from '../errors.js';
import { boolean } from './fields.js';
import { needs, parseStrictBody } from './issues.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const MODE_RULE = 'must be semantic, concrete or null';

const schema = z.strictObject({
  inference_routing_mode: z.enum(['semantic', 'concrete'], needs(MODE_RULE)).nullable().optional(),
  inference_endpoint_id: z.string(needs('must be an endpoint id (a UUID) or null')).regex(UUID, needs('must be an endpoint id (a UUID) or null')).nullable().optional(),
  is_default: boolean().optional(),
});

const FIELDS = Object.keys(schema.shape);

export type WorkspacePatch = z.infer<typeof schema>;

export function parseWorkspacePatch(body: unknown): WorkspacePatch {
  if (!body || typeof body !== 'object' || Array.isArray(body)) {
    throw new GatewayError('invalid_request', { message: 'The request body must be a JSON object of workspace fields.' });
  }
  const patch = parseStrictBody(schema, body, FIELDS);
  const dropsPin = patch.inference_routing_mode === 'semantic' || patch.inference_routing_mode === null;
  if (dropsPin && typeof patch.inference_endpoint_id === 'string') {
    throw new GatewayError('invalid_request', {
      param: 'inference_endpoint_id',
      message: `Setting inference_routing_mode to ${String(patch.inference_routing_mode)} drops the pinned endpoint; do not send inference_endpoint_id with it.`,
    });
  }
  return patch;
}
