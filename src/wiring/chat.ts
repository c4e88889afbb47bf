/**
 * What chat turns run on: the upstream client (every endpoint's pool of servers, built now, its API keys
 * read from the environment once), the usage ledger that charges limits and budgets as each turn's row is
 * recorded, the media fetcher for image URLs, and the chat services the routes receive.
 */
import type { ChatServices } from '../app/chat/chat-dispatch.js';
import { createMediaResolver } from '../app/chat/chat-media.js';
import type { Services } from '../app/services.js';
import type { Config } from '../config.js';
import type { AnswerBarrier } from '../http/reply.js';
import { pricingFromConfig } from '../core/usage/pricing.js';
import type { ExecToolRunner } from '../core/chat/exec-bridge.js';
import type { Logger } from '../log.js';
import type { Metrics } from '../metrics.js';
import { chargingLedger } from '../store/charging-ledger.js';
import { meteredLedger } from '../store/metered-ledger.js';
import { createStoreWriter, type StoreWriter } from '../store/store-writer.js';
import { createUsageJournal } from '../store/usage-journal.js';
import { createUsageLedger, type UsageLedger } from '../store/usage-ledger.js';
import { createMediaFetcher, type MediaFetcher } from '../upstream/media-fetcher.js';
import { outboundPolicyOf } from '../upstream/outbound-guard.js';
import { createUpstreamClient, type UpstreamClient } from '../upstream/upstream-client.js';
import { outboundUserAgent } from '../upstream/user-agent.js';
import { VERSION } from '../version.js';
import type { LimitsParts } from './limits.js';
import type { StoreParts } from './store.js';

export interface ChatParts {
  readonly upstream: UpstreamClient;
  /** One writer thread for the usage ledger and the routing decision log (two users). */
  readonly storeWriter: StoreWriter;
  /** Each turn's usage row also charges the token limiter and the budgets, once, as it is recorded. */
  readonly usage: UsageLedger;
  /** The usage journal as the HTTP answers' barrier (they leave once their rows are written); null: no journal. */
  readonly answerBarrier: AnswerBarrier | null;
  readonly mediaFetcher: MediaFetcher;
}

export function wireChat(config: Config, storage: StoreParts, limits: LimitsParts, metrics: Metrics, now: () => number, logger: Logger): ChatParts {
  const upstream = createUpstreamClient({
    projects: config.projects,
    now,
    logger,
    onUpstreamError: (endpoint, cause) => metrics.upstreamError(endpoint.projectId, endpoint.slug, cause),
  });
  const { store, dbPath, backend, catalog } = storage;
  const ledgerError = (message: string): void => logger.error({ message }, 'usage ledger write failed; will retry');
  const journal = store.durable ? createUsageJournal(dbPath, limits.instances.id, ledgerError) : null;
  const storeWriter = createStoreWriter({ path: dbPath, journalDir: journal?.dir ?? null, usagePgUrl: backend.pg ? (config.storage.url ?? null) : null }, 2);
  const ledger = createUsageLedger(storeWriter, journal, ledgerError);
  const usage = meteredLedger(chargingLedger(ledger, limits.limits, limits.budgets, pricingFromConfig(config)), metrics, catalog);
  const mediaFetcher = createMediaFetcher({
    policy: outboundPolicyOf(config.security),
    timeoutMs: config.media.fetch_timeout_ms,
    maxBytes: config.media.max_image_bytes,
    maxRedirects: config.media.max_redirects,
    userAgent: outboundUserAgent(VERSION, config.media),
  });
  return { upstream, storeWriter, usage, answerBarrier: journal, mediaFetcher };
}

export function chatServicesOf(services: Services, config: Config, { upstream, usage, mediaFetcher }: ChatParts, execTools: ExecToolRunner): ChatServices {
  return {
    ...services,
    upstream,
    usage,
    timeouts: config.timeouts,
    features: config.features,
    media: createMediaResolver(mediaFetcher, config.media),
    execTools,
  };
}
