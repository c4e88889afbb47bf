/**
 * Turns the first zod issue of a wire schema into the GatewayError the client sees (STYLE "Validation at
 * the edge"; SPEC "Errors": the envelope's `param` is the SPEC path, e.g. `messages[1].content[0].image_url.url`).
 *
 * Convention shared by every schema built with these helpers: an issue's `message` is a requirement
 * phrase ("must be a number between 0 and 2"); the error message reads `<param> <requirement>; got
 * <what was sent>.`, so the client learns both what was wrong and what is allowed. A custom issue may
 * carry `params.code` (a catalogue code other than invalid_request, e.g. unsupported_parameter) and
 * `params.got` (a better description of the offending value than the value at the issue's path).
 */
import { z } from 'zod';
import { describe } from '../core/describe-value.js';
import { ERROR_CATALOGUE, GatewayError, type ErrorCode } from '../errors.js';
import { safeParseCut } from './long-arrays.js';

type Issue = z.core.$ZodIssue;
type PathSegment = PropertyKey;

export interface IssueParams {
  code?: ErrorCode;
  got?: string;
}

/** Schema and check options carrying a requirement phrase, e.g. `z.string(needs('must be a string'))`. */
export function needs(requirement: string): { error: string } {
  return { error: requirement };
}

/** Adds a custom issue in a superRefine; `code` defaults to invalid_request. */
export function addIssue(
  ctx: z.core.$RefinementCtx,
  issue: { message: string; path?: PathSegment[]; code?: ErrorCode; got?: string },
): void {
  const params: IssueParams = {};
  if (issue.code) params.code = issue.code;
  if (issue.got !== undefined) params.got = issue.got;
  ctx.addIssue({ code: 'custom', message: issue.message, path: issue.path ?? [], params });
}

export interface IssueMapping {
  /**
   * Top-level fields whose SPEC param is the field itself however deep the problem sits (SPEC names
   * `stop`, `metadata`, `logit_bias` as the param, never an element or key of them).
   */
  opaque?: ReadonlySet<string>;
}

export function issueToGatewayError(issues: readonly Issue[], input: unknown, mapping: IssueMapping = {}): GatewayError {
  const first = issues[0];
  if (!first) return new GatewayError('invalid_request');
  const { issue, path } = innermost(first, []);
  // A strict object's unknown key: zod reports it at the object, whose value is the object itself, so the
  // generic wording read "<object> is not valid; got an object" with the key nowhere. Name the key instead.
  if (issue.code === 'unrecognized_keys') return unknownField(path, String(issue.keys[0] ?? ''));
  const fullPath = renderPath(path);
  const paramPath = mapping.opaque?.has(String(path[0])) ? path.slice(0, 1) : path;
  const param = renderPath(paramPath);
  const params = issue.code === 'custom' ? readParams(issue.params) : {};
  const got = params.got ?? describe(valueAt(input, path));
  const where = fullPath !== param ? ` at ${fullPath}` : '';
  const subject = param || 'The request body';
  return new GatewayError(params.code ?? 'invalid_request', {
    param: param || null,
    message: `${subject} ${requirementOf(issue)}; got ${got}${where}.`,
  });
}

function unknownField(objectPath: readonly PathSegment[], key: string): GatewayError {
  const param = renderPath([...objectPath, key]);
  // The message opens with the param alone, so a caller that prefixes nested params (the semantic-router
  // config PATCH) rewrites both the same way.
  const message = objectPath.length === 0 ? `${key} is not a field of this request.` : `${param} is not a known field.`;
  return new GatewayError('invalid_request', { param, message });
}

/**
 * The issue's requirement phrase. A schema built without `needs(...)` carries zod's own wording
 * ("Invalid input: expected string, received undefined"), capitalised, which would read as a validator's
 * log line: it is phrased here from the issue's facts instead, the way every other refusal reads.
 */
export function requirementOf(issue: Issue): string {
  if (!/^[A-Z]/.test(issue.message)) return issue.message;
  switch (issue.code) {
    case 'invalid_type':
      return `must be ${TYPE_NAMES[issue.expected] ?? `of type ${issue.expected}`}`;
    case 'invalid_value':
      return issue.values.length === 1 ? `must be ${JSON.stringify(issue.values[0])}` : `must be one of ${issue.values.map((v) => JSON.stringify(v)).join(', ')}`;
    case 'too_small':
      return bound('at least', issue.origin, Number(issue.minimum), issue.inclusive !== false);
    case 'too_big':
      return bound('at most', issue.origin, Number(issue.maximum), issue.inclusive !== false);
    case 'invalid_format':
      return `must be a valid ${issue.format}`;
    default:
      return 'is not valid';
  }
}

const TYPE_NAMES: Readonly<Record<string, string>> = {
  string: 'a string',
  number: 'a number',
  int: 'an integer',
  boolean: 'a boolean',
  array: 'an array',
  object: 'a JSON object',
  record: 'a JSON object',
  null: 'null',
};

function bound(side: 'at least' | 'at most', origin: string, limit: number, inclusive: boolean): string {
  const n = inclusive ? limit : side === 'at least' ? limit + 1 : limit - 1;
  if (origin === 'string') return side === 'at least' && n === 1 ? 'must be a non-empty string' : `must be ${side} ${n} character${n === 1 ? '' : 's'} long`;
  if (origin === 'array' || origin === 'set') return side === 'at least' && n === 1 ? 'must be a non-empty array' : `must have ${side} ${n} item${n === 1 ? '' : 's'}`;
  if (!inclusive) return `must be ${side === 'at least' ? 'greater' : 'less'} than ${limit}`;
  return `must be ${side} ${limit}`;
}

/**
 * A union reports one issue holding every option's issues. When the value had the shape of one option
 * (its first issue is not a type or enum mismatch at the union itself), that option's issue names the
 * real problem and its deeper path: `content[0].image_url.url`, not `content`.
 */
function innermost(issue: Issue, base: PathSegment[]): { issue: Issue; path: PathSegment[] } {
  const path = [...base, ...issue.path];
  if (issue.code !== 'invalid_union') return { issue, path };
  for (const option of issue.errors) {
    const head = option[0];
    if (head && !isShapeMismatch(head)) return innermost(head, path);
  }
  return { issue, path };
}

function isShapeMismatch(issue: Issue): boolean {
  return issue.path.length === 0 && (issue.code === 'invalid_type' || issue.code === 'invalid_value');
}

function readParams(raw: Record<string, unknown> | undefined): IssueParams {
  const out: IssueParams = {};
  if (!raw) return out;
  const code = raw['code'];
  if (typeof code === 'string' && Object.hasOwn(ERROR_CATALOGUE, code)) out.code = code as ErrorCode;
  if (typeof raw['got'] === 'string') out.got = raw['got'];
  return out;
}

/** `messages[1].content[0].image_url.url` */
export function renderPath(path: readonly PathSegment[]): string {
  return path.reduce<string>((acc, seg) => {
    if (typeof seg === 'number') return `${acc}[${seg}]`;
    return acc ? `${acc}.${String(seg)}` : String(seg);
  }, '');
}

function valueAt(input: unknown, path: readonly PathSegment[]): unknown {
  let value = input;
  for (const seg of path) {
    if (value === null || typeof value !== 'object') return undefined;
    value = (value as Record<PropertyKey, unknown>)[seg];
  }
  return value;
}

/**
 * A request body checked against a strict object schema: the data, or the GatewayError for its first
 * issue. An unknown field is named with the fields there are. `code` is the catalogue code the route
 * family answers with (`invalid_request` on management routes, `invalid_body` on the execution surface,
 * SPEC's code there).
 */
export function parseStrictBody<T>(
  schema: z.ZodType<T>,
  body: unknown,
  fields: readonly string[],
  options: { readonly code?: 'invalid_request' | 'invalid_body'; readonly mapping?: IssueMapping } = {},
): T {
  const result = safeParseCut(schema, body);
  if (result.success) return result.data;
  const { issues } = result.error;
  const code = options.code ?? 'invalid_request';
  const first = issues[0];
  if (first?.code === 'unrecognized_keys') {
    const key = String(first.keys[0] ?? '');
    // Accept and cancel take no fields at all: "the fields are ." named none.
    const allowed = fields.length === 0 ? 'this request takes no fields (send {} or no body)' : `the fields are ${fields.join(', ')}`;
    throw new GatewayError(code, { param: key, message: `${key} is not a field of this request; ${allowed}.` });
  }
  const e = issueToGatewayError(issues, body, options.mapping);
  return throwAs(code, e);
}

/** The issue's own code stays (unsupported_parameter, ...); only the generic one becomes the family's. */
function throwAs(code: 'invalid_request' | 'invalid_body', e: GatewayError): never {
  if (e.code === 'invalid_request' && code !== 'invalid_request') throw new GatewayError(code, { param: e.param, message: e.message });
  throw e;
}
