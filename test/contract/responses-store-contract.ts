/**
 * The responses storage port (src/core/store/responses-store.ts): one suite, run against SQLite and
 * PostgreSQL by responses-store.test.ts. Projects `proj_a` and `proj_b` exist in the store given.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { ConversationRecord, ResponseFinish, ResponseRecord, ResponsesStore } from '../../src/core/store/responses-store.js';
import type { WebhooksStore } from '../../src/core/store/webhooks-store.js';

export interface StoredEvent {
  readonly projectId: string;
  readonly type: string;
  /** `data.id` of the envelope. */
  readonly id: string;
}

export interface ResponsesStoreFixture {
  /** The store as run by gateway instance `owner` (one database, any number of instances). */
  storeOf(owner: string | null): ResponsesStore;
  /** The webhooks store on the same database: its endpoints are the events' subscribers. */
  readonly webhooks: WebhooksStore;
  /** Every event kept in the outbox tables, oldest first. */
  events(): Promise<StoredEvent[]>;
  /** Registers an instance as live in the registry recovery judges owners by. */
  register(instanceId: string): Promise<void>;
  /** Deletes an instance's registration, as a sibling's sweep does for a dead one. */
  unregister(instanceId: string): Promise<void>;
  close(): Promise<void>;
}

const NOW = 1_700_000_000_000;
const TYPES = ['response.completed', 'response.failed', 'conversation.created', 'conversation.deleted'];
const item = (id: string, text = id) => ({ id, type: 'message', role: 'user', content: [{ type: 'input_text', text }] });

const record = (id: string, over: Partial<ResponseRecord> = {}): ResponseRecord => ({
  id,
  projectId: 'proj_a',
  workspaceId: null,
  previousResponseId: null,
  conversationId: null,
  status: 'completed',
  input: [item(`in_${id}`)],
  body: { id, object: 'response', status: over.status ?? 'completed', output: [{ id: `out_${id}`, type: 'message' }], background: false },
  createdAt: NOW,
  ...over,
});

const finished = (r: ResponseRecord, over: Partial<ResponseFinish> = {}): ResponseFinish => ({
  store: r,
  projectId: r.projectId,
  responseId: r.id,
  failed: r.status === 'failed',
  background: false,
  conversation: null,
  ...over,
});

const conversation = (id: string, projectId = 'proj_a'): ConversationRecord => ({ id, projectId, workspaceId: 'ws_1', metadata: { topic: 'tests' }, createdAt: NOW });

export function responsesStoreContract(name: string, open: () => Promise<ResponsesStoreFixture>): void {
  describe(`responses store: ${name}`, () => {
    const opened: ResponsesStoreFixture[] = [];
    const fixture = async (): Promise<ResponsesStoreFixture> => {
      const f = await open();
      opened.push(f);
      for (const projectId of ['proj_a', 'proj_b']) {
        await f.webhooks.endpoints.insertCapped(
          { id: `wh_${projectId}`, projectId, url: 'https://receiver.example/hook', description: null, events: TYPES, isActive: true, metadata: {}, createdAt: NOW, updatedAt: NOW },
          'whsec_test',
          10,
        );
      }
      return f;
    };
    afterEach(async () => {
      for (const f of opened.splice(0)) await f.close();
    });

    it('stores a finished response with its event, finds it only in its project, and deletes it once', async () => {
      const f = await fixture();
      const { responses } = f.storeOf('inst_a');
      const r = record('resp_1', { workspaceId: 'ws_1', previousResponseId: 'resp_0' });
      await responses.finish(finished(r));
      expect(await responses.get('proj_a', 'resp_1')).toEqual({
        id: 'resp_1',
        projectId: 'proj_a',
        workspaceId: 'ws_1',
        previousResponseId: 'resp_0',
        status: 'completed',
        input: r.input,
        body: r.body,
      });
      expect(await responses.get('proj_b', 'resp_1')).toBeNull();
      expect(await f.events()).toEqual([{ projectId: 'proj_a', type: 'response.completed', id: 'resp_1' }]);
      expect(await responses.delete('proj_b', 'resp_1')).toBe(false);
      expect(await responses.delete('proj_a', 'resp_1')).toBe(true);
      expect(await responses.delete('proj_a', 'resp_1')).toBe(false);
      expect(await responses.get('proj_a', 'resp_1')).toBeNull();
    });

    it('keeps the body exactly as given (key order included)', async () => {
      const f = await fixture();
      const { responses } = f.storeOf('inst_a');
      const body = { zeta: 1, alpha: { y: 2, b: 3 }, id: 'resp_o', status: 'completed' };
      await responses.finish(finished(record('resp_o', { body })));
      expect(JSON.stringify((await responses.get('proj_a', 'resp_o'))?.body)).toBe(JSON.stringify(body));
    });

    it('emits the event of an unstored response and appends its items to the conversation, in order', async () => {
      const f = await fixture();
      const { responses, conversations } = f.storeOf('inst_a');
      await conversations.create(conversation('conv_1'), [item('i1')]);
      const items = [item('i2'), item('i3'), item('i4')];
      await responses.finish({ store: null, projectId: 'proj_a', responseId: 'resp_x', failed: false, background: false, conversation: { id: 'conv_1', items, createdAt: NOW + 1 } });
      await responses.finish({ store: null, projectId: 'proj_a', responseId: 'resp_y', failed: true, background: false, conversation: null });
      expect(await responses.get('proj_a', 'resp_x')).toBeNull();
      expect((await conversations.listItems('conv_1', { limit: 10, after: null, order: 'asc' }))?.items.map((i) => i.id)).toEqual(['i1', 'i2', 'i3', 'i4']);
      expect((await f.events()).map((e) => `${e.type}:${e.id}`)).toEqual(['conversation.created:conv_1', 'response.completed:resp_x', 'response.failed:resp_y']);
    });

    it('moves a background response through queued and in_progress; a cancel stands against the finish that follows', async () => {
      const f = await fixture();
      const { responses } = f.storeOf('inst_a');
      await responses.queue(record('resp_b', { status: 'queued', body: { id: 'resp_b', status: 'queued', background: true } }));
      expect((await responses.get('proj_a', 'resp_b'))?.status).toBe('queued');
      expect(await responses.transition('proj_a', 'resp_b', 'in_progress', { id: 'resp_b', status: 'in_progress' })).toBe(true);
      expect(await responses.transition('proj_a', 'resp_b', 'cancelled', { id: 'resp_b', status: 'cancelled' })).toBe(true);
      expect(await responses.transition('proj_a', 'resp_b', 'cancelled', { id: 'resp_b', status: 'cancelled' })).toBe(false);
      await responses.finish(finished(record('resp_b'), { background: true }));
      expect(await responses.get('proj_a', 'resp_b')).toMatchObject({ status: 'cancelled', body: { status: 'cancelled' } });
      expect(await f.events()).toEqual([]);

      await responses.queue(record('resp_c', { status: 'queued', body: { id: 'resp_c', status: 'queued' } }));
      await responses.finish(finished(record('resp_c'), { background: true }));
      expect(await responses.get('proj_a', 'resp_c')).toMatchObject({ status: 'completed', body: { status: 'completed' } });
      expect(await f.events()).toEqual([{ projectId: 'proj_a', type: 'response.completed', id: 'resp_c' }]);
    });

    it('fails the running responses of instances no longer registered, each once with response.failed, and leaves a live one alone', async () => {
      const f = await fixture();
      await f.register('inst_a');
      await f.register('inst_b');
      const a = f.storeOf('inst_a').responses;
      const b = f.storeOf('inst_b').responses;
      const queued = (id: string, projectId = 'proj_a') => record(id, { projectId, status: 'queued', body: { id, status: 'queued', background: true } });
      await a.queue(queued('resp_a1'));
      await b.queue(queued('resp_b1'));
      await b.queue(queued('resp_b2', 'proj_b'));
      await b.queue(queued('resp_b3'));
      await b.finish(finished(record('resp_b3'), { background: true }));
      const error = { code: 'interrupted', message: 'stopped' };
      expect(await a.failRunning(error, 'abandoned')).toBe(0);

      await f.unregister('inst_b');
      // Two live replicas recovering at the same moment fail each response once.
      const c = f.storeOf('inst_c').responses;
      const counts = await Promise.all([a.failRunning(error, 'abandoned'), c.failRunning(error, 'abandoned')]);
      expect(counts[0] + counts[1]).toBe(2);
      expect(await a.failRunning(error, 'abandoned')).toBe(0);
      expect(await a.get('proj_a', 'resp_b1')).toMatchObject({ status: 'failed', body: { id: 'resp_b1', status: 'failed', background: true, error } });
      expect((await a.get('proj_b', 'resp_b2'))?.status).toBe('failed');
      expect((await a.get('proj_a', 'resp_b3'))?.status).toBe('completed');
      expect((await a.get('proj_a', 'resp_a1'))?.status).toBe('queued');

      expect(await a.failRunning(error, 'mine')).toBe(1);
      expect((await a.get('proj_a', 'resp_a1'))?.status).toBe('failed');
      const failed = (await f.events()).filter((e) => e.type === 'response.failed');
      expect(failed.map((e) => `${e.projectId}:${e.id}`).sort()).toEqual(['proj_a:resp_a1', 'proj_a:resp_b1', 'proj_b:resp_b2']);
    });

    it('creates, updates, pages and deletes a conversation with its items and events', async () => {
      const f = await fixture();
      const { conversations } = f.storeOf(null);
      const c = conversation('conv_1');
      await conversations.create(c, [item('i1'), item('i2')]);
      await conversations.addItems('conv_1', [item('i3'), item('i4'), item('i5')], NOW + 5);
      expect(await conversations.get('proj_a', 'conv_1')).toEqual(c);
      expect(await conversations.get('proj_b', 'conv_1')).toBeNull();
      expect(await conversations.updateMetadata('proj_a', 'conv_1', { topic: 'new' })).toBe(true);
      expect(await conversations.updateMetadata('proj_b', 'conv_1', { topic: 'new' })).toBe(false);
      expect((await conversations.get('proj_a', 'conv_1'))?.metadata).toEqual({ topic: 'new' });

      const ids = async (query: { limit: number; after: string | null; order: 'asc' | 'desc' }) => {
        const page = await conversations.listItems('conv_1', query);
        return page && { ids: page.items.map((i) => i.id), hasMore: page.hasMore };
      };
      expect(await ids({ limit: 2, after: null, order: 'asc' })).toEqual({ ids: ['i1', 'i2'], hasMore: true });
      expect(await ids({ limit: 2, after: 'i2', order: 'asc' })).toEqual({ ids: ['i3', 'i4'], hasMore: true });
      expect(await ids({ limit: 2, after: 'i4', order: 'asc' })).toEqual({ ids: ['i5'], hasMore: false });
      expect(await ids({ limit: 3, after: null, order: 'desc' })).toEqual({ ids: ['i5', 'i4', 'i3'], hasMore: true });
      expect(await ids({ limit: 3, after: 'i3', order: 'desc' })).toEqual({ ids: ['i2', 'i1'], hasMore: false });
      expect(await ids({ limit: 3, after: 'nope', order: 'asc' })).toBeNull();
      expect(await conversations.countItems('conv_1')).toBe(5);
      expect((await conversations.contextItems('conv_1', 2)).map((i) => i.id)).toEqual(['i4', 'i5']);
      expect((await conversations.contextItems('conv_1', null)).map((i) => i.id)).toEqual(['i1', 'i2', 'i3', 'i4', 'i5']);
      expect(await conversations.getItem('conv_1', 'i3')).toEqual(item('i3'));
      expect(await conversations.getItem('conv_1', 'nope')).toBeNull();
      expect(await conversations.deleteItem('conv_1', 'i3')).toBe(true);
      expect(await conversations.deleteItem('conv_1', 'i3')).toBe(false);
      expect(await conversations.countItems('conv_1')).toBe(4);

      expect(await conversations.delete('proj_b', 'conv_1')).toBe(false);
      expect(await conversations.delete('proj_a', 'conv_1')).toBe(true);
      expect(await conversations.delete('proj_a', 'conv_1')).toBe(false);
      expect(await conversations.get('proj_a', 'conv_1')).toBeNull();
      expect(await conversations.countItems('conv_1')).toBe(0);
      expect((await f.events()).map((e) => `${e.type}:${e.id}`)).toEqual(['conversation.created:conv_1', 'conversation.deleted:conv_1']);
    });

    it('writes no event for a project without subscribers', async () => {
      const f = await fixture();
      await f.webhooks.endpoints.delete('proj_b', 'wh_proj_b');
      const { responses, conversations } = f.storeOf(null);
      await responses.finish(finished(record('resp_q', { projectId: 'proj_b' })));
      await conversations.create(conversation('conv_q', 'proj_b'), []);
      expect(await f.events()).toEqual([]);
      expect((await responses.get('proj_b', 'resp_q'))?.id).toBe('resp_q');
    });
  });
}
