/**
 * `GET /{project}/v1/management/usage`: usage and spend totals per UTC day, key, endpoint, model or
 * workspace over a time range, paginated like the webhook lists (README "Usage and spend"). Management
 * scope and rate limit. The totals come from the usage store: SQLite's reader thread (store/usage-reader.ts),
 * so a long report never stalls the event loop, or PostgreSQL, the sum over every replica (issue 12).
 */
import { formatUsd } from '../core/usage/cost.js';
import type { RouteDef } from '../http/server.js';
import { parseUsageQuery } from '../schemas/management-usage.js';
import { DAY_MS, type UsageGroupBy, type UsageTotals, type UsageTotalsSource } from '../core/store/usage-store.js';
import { keyed } from './guard.js';
import type { Services } from '../app/services.js';

export interface UsageServices extends Services {
  readonly usageReader: UsageTotalsSource;
}

/** The field that names a group on the wire; its value is also the `after` cursor of the next page. */
function groupFields(groupBy: UsageGroupBy, group: UsageTotals['group']): Record<string, string | number | null> {
  switch (groupBy) {
    case 'day': {
      const start = Number(group);
      return { start_time: start / 1000, end_time: (start + DAY_MS) / 1000 };
    }
    case 'key':
      return { api_key_id: group };
    case 'endpoint':
      return { endpoint_id: group };
    case 'model':
      return { model: group };
    case 'workspace':
      return { workspace_id: group };
  }
}

/**
 * One group's totals, in the usage object's names (prompt/completion/total, cached and reasoning). The
 * cost is a decimal string of USD with every digit of the exact nano-dollar sum: a JSON number would
 * round it. It is null when no turn of the group had a price; `unpriced_requests` counts those turns.
 */
export function usageResultWire(groupBy: UsageGroupBy, t: UsageTotals) {
  return {
    object: 'usage.result' as const,
    ...groupFields(groupBy, t.group),
    requests: t.requests,
    prompt_tokens: t.promptTokens,
    completion_tokens: t.completionTokens,
    total_tokens: t.promptTokens + t.completionTokens,
    cached_tokens: t.cachedTokens,
    reasoning_tokens: t.reasoningTokens,
    cost_usd: t.costNanos === null ? null : formatUsd(t.costNanos),
    unpriced_requests: t.unpricedRequests,
  };
}

export function managementUsageRoutes(services: UsageServices): RouteDef[] {
  return [
    keyed(services, 'management', {
      method: 'GET',
      pattern: '/:project/v1/management/usage',
      family: 'management',
      async handle(ctx, auth) {
        const projectId = auth.project.id;
        const q = parseUsageQuery(ctx.req.searchParams(), services.now());
        const page = await services.usageReader.page({
          projectId,
          start: q.startTime * 1000,
          end: q.endTime * 1000,
          groupBy: q.groupBy,
          limit: q.limit,
          after: q.after,
        });
        ctx.reply.json(200, {
          object: 'list',
          group_by: q.groupBy,
          start_time: q.startTime,
          end_time: q.endTime,
          data: page.items.map((t) => usageResultWire(q.groupBy, t)),
          has_more: page.hasMore,
        });
      },
    }),
  ];
}
