/**
 * Invocation arguments checked against the tool's `input_schema` (docs/exec.md validation order, last
 * step): 400 `invalid_body` whose param is `arguments` plus the JSON pointer of the offending value
 * (`arguments/path`, `arguments/options/depth`; a missing required property names where it belongs).
 *
 * The check itself runs behind a port (issue 31): the gateway validates on a schema thread under a
 * deadline (src/pool/schema-pool.ts), so neither compiling a large schema nor matching a pattern ever
 * holds its event loop; tests and tools may validate in-process (schema-compiler.ts).
 */
import { GatewayError } from '../../errors.js';
import type { ArgumentsVerdict } from './schema-compiler.js';

export interface ArgumentsValidator {
  /**
   * Rejects with a GatewayError when the check could not be made (deadline passed, thread gone).
   * `tenant` (the project id) is whose turn the check takes on shared threads: one project's slow
   * arguments must not hold another's.
   */
  validate(schema: Record<string, unknown>, args: Record<string, unknown>, tenant: string): Promise<ArgumentsVerdict>;
}

export async function checkArguments(validator: ArgumentsValidator, toolName: string, schema: Record<string, unknown>, args: Record<string, unknown>, tenant: string): Promise<void> {
  const verdict = await validator.validate(schema, args, tenant);
  if (verdict.kind === 'valid') return;
  if (verdict.kind === 'unusable') {
    // The agents' side validates manifests at enrollment; a schema that fails here is theirs to refuse.
    throw new GatewayError('internal_error', { message: `The input_schema of tool ${toolName} cannot be compiled: ${verdict.message}` });
  }
  const param = `arguments${verdict.pointer}`;
  throw new GatewayError('invalid_body', { param, message: `${param} ${verdict.message} (the input_schema of tool ${toolName}).` });
}
