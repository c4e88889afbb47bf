/**
 * Webhook endpoints: the SQL of the management routes. Signing secrets are sealed (secret-box.ts) with
 * the webhook id as associated data and opened only to sign.
 */
import type { Page, WebhookEndpointRecord, WebhookPatch } from '../core/webhooks/delivery.js';
import { writeTransaction, type Db } from './db.js';
import { fromJson, toJson } from './json-column.js';
import type { SecretBox } from './secret-box.js';

interface EndpointRow {
  seq: number;
  id: string;
  project_id: string;
  url: string;
  description: string | null;
  events: string;
  is_active: number;
  metadata: string;
  created_at: number;
  updated_at: number;
}

function toRecord(r: EndpointRow): WebhookEndpointRecord {
  return {
    id: r.id,
    projectId: r.project_id,
    url: r.url,
    description: r.description,
    events: fromJson<string[]>(r.events),
    isActive: r.is_active === 1,
    metadata: fromJson<Record<string, string>>(r.metadata),
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  };
}

const COLUMNS = 'seq, id, project_id, url, description, events, is_active, metadata, created_at, updated_at';

export function createWebhooksRepo(db: Db, box: SecretBox) {
  const insert = db.prepare(`
    INSERT INTO webhook_endpoints (id, project_id, url, description, secret_sealed, events, is_active, metadata, created_at, updated_at)
    VALUES (@id, @projectId, @url, @description, @secretSealed, @events, 1, @metadata, @createdAt, @createdAt)`);
  const countFor = db.prepare<[string], { n: number }>('SELECT COUNT(*) AS n FROM webhook_endpoints WHERE project_id = ?');
  const byId = db.prepare<[string, string], EndpointRow>(`SELECT ${COLUMNS} FROM webhook_endpoints WHERE project_id = ? AND id = ?`);
  const sealedById = db.prepare<[string, string], { secret_sealed: string }>('SELECT secret_sealed FROM webhook_endpoints WHERE project_id = ? AND id = ?');
  // Newest first; `after` is the seq of the last item of the previous page.
  const page = db.prepare<[string, number, number], EndpointRow>(
    `SELECT ${COLUMNS} FROM webhook_endpoints WHERE project_id = ? AND seq < ? ORDER BY seq DESC LIMIT ?`,
  );
  const update = db.prepare(`
    UPDATE webhook_endpoints SET url = @url, description = @description, events = @events, is_active = @isActive,
      metadata = @metadata, updated_at = @updatedAt WHERE project_id = @projectId AND id = @id`);
  const deleteEndpoint = db.prepare('DELETE FROM webhook_endpoints WHERE project_id = ? AND id = ?');
  // Events only this endpoint's deliveries referenced go with them.
  const deleteOrphanEvents = db.prepare(`
    DELETE FROM webhook_events WHERE id IN (SELECT DISTINCT event_id FROM webhook_deliveries WHERE webhook_id = ?)
      AND NOT EXISTS (SELECT 1 FROM webhook_deliveries o WHERE o.event_id = webhook_events.id AND o.webhook_id <> ?)`);
  const deleteDeliveries = db.prepare('DELETE FROM webhook_deliveries WHERE webhook_id = ?');

  // Each transaction here reads before it writes (the count, the row): hence writeTransaction (db.ts),
  // which takes the write lock first, so the cap holds against every other writer of the file too.
  const insertCapped = writeTransaction(db, (record: WebhookEndpointRecord, secret: string, max: number): boolean => {
    if ((countFor.get(record.projectId)?.n ?? 0) >= max) return false;
    insert.run({
      id: record.id,
      projectId: record.projectId,
      url: record.url,
      description: record.description,
      secretSealed: box.seal(secret, record.id),
      events: toJson(record.events),
      metadata: toJson(record.metadata),
      createdAt: record.createdAt,
    });
    return true;
  });

  const applyPatch = writeTransaction(db, (projectId: string, id: string, patch: WebhookPatch, now: number): WebhookEndpointRecord | null => {
    const row = byId.get(projectId, id);
    if (!row) return null;
    const current = toRecord(row);
    const next: WebhookEndpointRecord = {
      ...current,
      url: patch.url ?? current.url,
      events: patch.events ?? current.events,
      description: patch.description === undefined ? current.description : patch.description,
      isActive: patch.isActive ?? current.isActive,
      metadata: patch.metadata ?? current.metadata,
      updatedAt: now,
    };
    update.run({
      projectId,
      id,
      url: next.url,
      description: next.description,
      events: toJson(next.events),
      isActive: next.isActive ? 1 : 0,
      metadata: toJson(next.metadata),
      updatedAt: now,
    });
    return next;
  });

  const remove = writeTransaction(db, (projectId: string, id: string): boolean => {
    if (!byId.get(projectId, id)) return false;
    deleteOrphanEvents.run(id, id);
    deleteDeliveries.run(id);
    deleteEndpoint.run(projectId, id);
    return true;
  });

  return {
    /** Inserts unless the project already has `max` endpoints (checked in the same transaction). */
    insertCapped: (record: WebhookEndpointRecord, secret: string, max: number): boolean => insertCapped(record, secret, max),
    get: (projectId: string, id: string): WebhookEndpointRecord | null => {
      const row = byId.get(projectId, id);
      return row ? toRecord(row) : null;
    },
    /** The signing secret in clear, for a test delivery; null when it cannot be opened. */
    secret(projectId: string, id: string): string | null {
      const row = sealedById.get(projectId, id);
      if (!row) return null;
      try {
        return box.open(row.secret_sealed, id);
      } catch {
        return null;
      }
    },
    list(projectId: string, limit: number, after: string | null): Page<WebhookEndpointRecord> | null {
      let before = Number.MAX_SAFE_INTEGER;
      if (after !== null) {
        const cursor = byId.get(projectId, after);
        if (!cursor) return null;
        before = cursor.seq;
      }
      const rows = page.all(projectId, before, limit + 1);
      return { items: rows.slice(0, limit).map(toRecord), hasMore: rows.length > limit };
    },
    update: (projectId: string, id: string, patch: WebhookPatch, now: number): WebhookEndpointRecord | null => applyPatch(projectId, id, patch, now),
    /** Deletes the endpoint, its delivery records and the events no other endpoint still needs. */
    delete: (projectId: string, id: string): boolean => remove(projectId, id),
  };
}

export type WebhooksRepo = ReturnType<typeof createWebhooksRepo>;
