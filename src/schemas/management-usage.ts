/**
 * Query of `GET /{project}/v1/management/usage` (README "Usage and spend"). Strict, like the bodies: a
 * parameter the route does not know (a misspelt `groupby`) is a 400 naming it, never silently ignored,
 * and so is one given twice. Times are Unix seconds, like the rest of the API; `start`/`end` are accepted
 * as short names of `start_time`/`end_time`.
 */
import { z } from 'zod';
import { GatewayError, type ErrorCode } from '../errors.js';
import { DAY_MS, USAGE_GROUPS, type UsageGroupBy } from '../core/store/usage-store.js';
import { describe } from '../core/describe-value.js';
import { requirementOf } from './issues.js';

export const DEFAULT_USAGE_PAGE = 20;
export const MAX_USAGE_PAGE = 100;
/** The range when none is given: the last 24 hours. */
export const DEFAULT_USAGE_RANGE_S = DAY_MS / 1000;

const ALIASES: Readonly<Record<string, string>> = { start: 'start_time', end: 'end_time' };

const seconds = z.string().regex(/^\d{1,12}$/, 'must be a Unix time in whole seconds, e.g. 1767225600').transform(Number);

const querySchema = z.strictObject({
  start_time: seconds.optional(),
  end_time: seconds.optional(),
  group_by: z.enum(USAGE_GROUPS, `must be one of ${USAGE_GROUPS.join(', ')}`).default('day'),
  limit: z
    .string()
    .regex(/^\d+$/, `must be an integer from 1 to ${MAX_USAGE_PAGE}`)
    .transform(Number)
    .pipe(z.number().int().min(1, `must be an integer from 1 to ${MAX_USAGE_PAGE}`).max(MAX_USAGE_PAGE, `must be an integer from 1 to ${MAX_USAGE_PAGE}`))
    .default(DEFAULT_USAGE_PAGE),
  after: z.string().min(1, 'must be the group of the last item of the previous page').optional(),
});

export interface UsageRequest {
  /** Unix seconds, inclusive. */
  readonly startTime: number;
  /** Unix seconds, exclusive. */
  readonly endTime: number;
  readonly groupBy: UsageGroupBy;
  readonly limit: number;
  /** day: Unix ms of a day's start; otherwise a key, endpoint, model or workspace id. */
  readonly after: string | number | null;
}

const fail = (param: string, requirement: string, got: unknown, code: ErrorCode = 'invalid_query'): GatewayError =>
  new GatewayError(code, { param, message: `${param} ${requirement}; got ${describe(got)}.` });

/**
 * Defaults: `end_time` now (rounded up to the next second, so this second's turns are in), `start_time`
 * 24 hours before the end.
 */
export function parseUsageQuery(query: URLSearchParams, nowMs: number): UsageRequest {
  const raw: Record<string, string> = {};
  for (const [name, value] of query) {
    const field = ALIASES[name] ?? name;
    if (raw[field] !== undefined) {
      throw new GatewayError('invalid_query', { param: name, message: `${name} is given more than once${field !== name ? ` (or with ${field})` : ''}.` });
    }
    raw[field] = value;
  }
  const result = querySchema.safeParse(raw);
  if (!result.success) {
    const issue = result.error.issues[0];
    if (issue?.code === 'unrecognized_keys') {
      const name = issue.keys[0] ?? '';
      throw new GatewayError('invalid_query', {
        param: name,
        message: `${name} is not a parameter of this route; the parameters are start_time, end_time, group_by, limit and after.`,
      });
    }
    const param = String(issue?.path[0] ?? '');
    throw fail(param, issue ? requirementOf(issue) : 'is invalid', raw[param], param === 'limit' ? 'invalid_limit' : 'invalid_query');
  }
  const q = result.data;
  const endTime = q.end_time ?? Math.floor(nowMs / 1000) + 1;
  const startTime = q.start_time ?? Math.max(0, endTime - DEFAULT_USAGE_RANGE_S);
  if (endTime <= startTime) throw fail('end_time', `must be after start_time (${startTime})`, raw.end_time ?? endTime);
  let after: string | number | null = q.after ?? null;
  if (after !== null && q.group_by === 'day') {
    if (!/^\d{1,12}$/.test(after)) throw fail('after', 'must be the start_time of the last day of the previous page (Unix seconds)', after);
    after = Number(after) * 1000;
  }
  return { startTime, endTime, groupBy: q.group_by, limit: q.limit, after };
}
