/**
 * Invocation arguments checked against the tool's `input_schema` (docs/exec.md validation order, last
 * step): 400 `invalid_body` whose param is `arguments` plus the JSON pointer of the offending value
 * (`arguments/path`, `arguments/options/depth`; a missing required property names where it belongs).
 */
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import { GatewayError } from '../../errors.js';

// strict: false: manifests come from agents and may carry keywords of other drafts or annotations
// (`examples`, `x-...`) that strict mode would refuse after the manifest was already accepted.
const ajv = new Ajv({ strict: false, allErrors: false });

// By schema object: an agent's manifest objects live as long as its enrollment, and go with it.
const compiled = new WeakMap<object, ValidateFunction>();

function validatorOf(schema: Record<string, unknown>): ValidateFunction {
  let validate = compiled.get(schema);
  if (!validate) {
    validate = ajv.compile(schema);
    // Ajv keeps every compiled schema (and any `$id`) for its lifetime; ours are cached above instead,
    // so re-enrollments neither pile up nor collide on a repeated `$id`.
    ajv.removeSchema(schema);
    compiled.set(schema, validate);
  }
  return validate;
}

const escapePointer = (s: string): string => s.replace(/~/g, '~0').replace(/\//g, '~1');

function pointerOf(e: ErrorObject): string {
  const params = e.params as Record<string, unknown>;
  if (e.keyword === 'required' && typeof params.missingProperty === 'string') return `${e.instancePath}/${escapePointer(params.missingProperty)}`;
  if (e.keyword === 'additionalProperties' && typeof params.additionalProperty === 'string') {
    return `${e.instancePath}/${escapePointer(params.additionalProperty)}`;
  }
  return e.instancePath;
}

export function checkArguments(toolName: string, schema: Record<string, unknown>, args: Record<string, unknown>): void {
  let validate: ValidateFunction;
  try {
    validate = validatorOf(schema);
  } catch (err) {
    // The agents' side validates manifests at enrollment; a schema ajv cannot compile is theirs to refuse.
    throw new GatewayError('internal_error', { message: `The input_schema of tool ${toolName} cannot be compiled: ${(err as Error).message}` });
  }
  if (validate(args)) return;
  const first = validate.errors?.[0];
  const pointer = first ? pointerOf(first) : '';
  const param = `arguments${pointer}`;
  const what = first?.message ?? 'does not match the schema';
  throw new GatewayError('invalid_body', { param, message: `${param} ${what} (the input_schema of tool ${toolName}).` });
}
