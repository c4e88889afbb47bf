/**
 * SPEC "Audio": POST /{project}/{endpoint}/v1/audio/transcriptions, /translations (multipart, streamed to
 * the endpoint's upstream as it arrives) and /speech (JSON). Same key, limits, budgets and accounting as
 * chat; the response comes back as the model server returned it (json, text, srt, vtt, verbose_json,
 * audio bytes or SSE), one usage row per request (route `audio`). The same three under /{project}/v1
 * pick the endpoint by the `model` field instead of a slug (issue 20; core/models/resolve-model.ts).
 */
import type { Readable } from 'node:stream';
import type { AudioConfig } from '../config.js';
import { speechUsage, transcriptionUsage } from '../core/audio/audio-usage.js';
import type { AuthenticatedKey } from '../core/auth/authenticate.js';
import { deadlinesFor } from '../core/chat/deadlines.js';
import { spliceTopLevel } from '../core/json-splice.js';
import type { EndpointRecord } from '../core/records.js';
import { GatewayError } from '../errors.js';
import type { RouteContext, RouteDef } from '../http/server.js';
import { checkTranscriptionField, parseSpeechRequest, type SpeechRequest } from '../schemas/audio.js';
import { readModelField } from './audio-model-field.js';
import { forwardUpload } from './audio-upload.js';
import { pipeToClient, recordAudioUsage, startAudioCall, type AudioAccount } from '../app/audio/audio-call.js';
import type { ChatServices, Outcome } from '../app/chat/chat-dispatch.js';
import { requireBudget, type EndpointAccess } from '../app/endpoint-access.js';
import { keyed, requireEndpoint, requireModel } from './guard.js';

export interface AudioServices extends ChatServices {
  readonly audio: AudioConfig;
}

const KIND_NEEDED = { transcriptions: 'transcription', translations: 'transcription', speech: 'speech' } as const;
type AudioRoute = keyof typeof KIND_NEEDED;

interface Admitted {
  readonly endpoint: EndpointRecord;
  readonly account: AudioAccount;
}

/** Key, endpoint of the right kind and status, budget: in that order (docs/decisions.md "Order of checks"). */
function admit(ctx: RouteContext, services: ChatServices, auth: AuthenticatedKey, route: AudioRoute): Admitted {
  return admitEndpoint(ctx, services, auth, requireEndpoint(ctx.req, services, auth), route);
}

/** The endpoint's checks, whether a slug or the `model` field named it. */
function admitEndpoint(ctx: RouteContext, services: ChatServices, auth: AuthenticatedKey, access: EndpointAccess, route: AudioRoute): Admitted {
  const { endpoint } = access;
  const needed = KIND_NEEDED[route];
  if (endpoint.kind !== needed) {
    throw new GatewayError('invalid_request', {
      message: `Endpoint ${endpoint.slug} is a ${endpoint.kind} endpoint; /v1/audio/${route} needs a ${needed} endpoint.`,
    });
  }
  if (endpoint.status !== 'active') {
    throw new GatewayError('endpoint_unavailable', { message: `Endpoint ${endpoint.slug} is ${endpoint.status}, not active.` });
  }
  requireBudget(ctx, services, auth, access);
  return { endpoint, account: { projectId: auth.project.id, workspaceId: access.workspaceId, keyId: auth.key.id } };
}

/** Project-level routes: the endpoint the body's `model` names, of the kind the route serves. */
function admitModel(ctx: RouteContext, services: ChatServices, auth: AuthenticatedKey, model: string, route: AudioRoute): Admitted {
  const access = requireModel(ctx.req, services, auth, { model, kind: KIND_NEEDED[route], route: `/v1/audio/${route}` });
  return admitEndpoint(ctx, services, auth, access, route);
}

type UploadRoute = 'transcriptions' | 'translations';

function uploadRoute(services: AudioServices, route: UploadRoute): RouteDef {
  return keyed(services, 'inference', {
    method: 'POST',
    pattern: `/:project/:endpoint/v1/audio/${route}`,
    family: 'audio',
    streamBody: true,
    bodyLimit: services.audio.max_upload_bytes,
    handle: async (ctx, auth) => {
      const admitted = admit(ctx, services, auth, route);
      const source = ctx.req.bodyStream();
      if (!source) throw new GatewayError('internal_error');
      await serveUpload(services, ctx, route, admitted, source);
    },
  });
}

/** The `model` form field picks the endpoint; the body is replayed whole to the direct route's forwarder. */
function projectUploadRoute(services: AudioServices, route: UploadRoute): RouteDef {
  return keyed(services, 'inference', {
    method: 'POST',
    pattern: `/:project/v1/audio/${route}`,
    family: 'audio',
    streamBody: true,
    bodyLimit: services.audio.max_upload_bytes,
    handle: async (ctx, auth) => {
      const source = ctx.req.bodyStream();
      if (!source) throw new GatewayError('internal_error');
      const field = await readModelField(source, ctx.req.header('content-type'));
      await serveUpload(services, ctx, route, admitModel(ctx, services, auth, field.model, route), field.body);
    },
  });
}

async function serveUpload(services: AudioServices, ctx: RouteContext, route: UploadRoute, admitted: Admitted, source: Readable): Promise<void> {
  const { req, reply } = ctx;
  const { endpoint, account } = admitted;
  const task = route === 'transcriptions' ? 'transcribe' : 'translate';
  const upload = forwardUpload(source, req.header('content-type'), {
    upstreamModel: endpoint.upstream.model,
    checkField: (name, value) => checkTranscriptionField(name, value, task),
  });
  await upload.fileStarted;
  const { response, deadline } = startAudioCall(services, req, endpoint, { path: `/audio/${route}`, body: upload.body, contentType: upload.contentType }, deadlinesFor(endpoint.tier, services.timeouts, false));
  const record = (outcome: Outcome, usage: ReturnType<typeof transcriptionUsage> | null): void =>
    recordAudioUsage(services, { requestId: req.requestId, endpoint, account, route: 'audio', outcome, usage, started: deadline.started });
  let fileBytes = 0;
  try {
    // An upstream that refuses early (before reading the whole upload) answers before the upload ends:
    // the response rejects with its error then.
    await Promise.race([upload.finished, response]);
    fileBytes = (await upload.finished).fileBytes;
    const res = await response;
    req.log.upstreamMs = performance.now() - deadline.started;
    deadline.done();
    const contentType = String(res.headers['content-type'] ?? '');
    await pipeToClient(req, reply, res, false, (piped) => record(piped.outcome, piped.outcome === 'completed' ? transcriptionUsage(contentType, piped.kept, fileBytes, piped.complete) : null));
  } catch (err) {
    deadline.abort();
    deadline.done();
    const e = err instanceof GatewayError && (err.status === 400 || err.status === 413) ? err : deadline.failure(err);
    record(req.aborted ? 'aborted' : e.code === 'timeout' ? 'timeout' : 'error', null);
    throw e;
  }
}

async function readSpeech(ctx: RouteContext): Promise<{ parsed: Record<string, unknown>; speech: SpeechRequest }> {
  const parsed = await ctx.req.json();
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw new GatewayError('invalid_request', { message: 'The request body must be a JSON object.' });
  }
  return { parsed: parsed as Record<string, unknown>, speech: parseSpeechRequest(parsed) };
}

function speechRoute(services: AudioServices): RouteDef {
  return keyed(services, 'inference', {
    method: 'POST',
    pattern: '/:project/:endpoint/v1/audio/speech',
    family: 'audio',
    handle: async (ctx, auth) => {
      const admitted = admit(ctx, services, auth, 'speech');
      await serveSpeech(services, ctx, admitted, await readSpeech(ctx));
    },
  });
}

function projectSpeechRoute(services: AudioServices): RouteDef {
  return keyed(services, 'inference', {
    method: 'POST',
    pattern: '/:project/v1/audio/speech',
    family: 'audio',
    handle: async (ctx, auth) => {
      const body = await readSpeech(ctx);
      await serveSpeech(services, ctx, admitModel(ctx, services, auth, body.speech.model, 'speech'), body);
    },
  });
}

async function serveSpeech(services: AudioServices, ctx: RouteContext, admitted: Admitted, body: { parsed: Record<string, unknown>; speech: SpeechRequest }): Promise<void> {
  const { req, reply } = ctx;
  const { endpoint, account } = admitted;
  const { parsed, speech } = body;
  const raw = await req.body();
  const forwarded = spliceTopLevel(raw, new Map([['model', JSON.stringify(endpoint.upstream.model)]])) ?? Buffer.from(JSON.stringify({ ...parsed, model: endpoint.upstream.model }));
  const sse = speech.stream_format === 'sse';
  const { response, deadline } = startAudioCall(services, req, endpoint, { path: '/audio/speech', body: forwarded, ...(sse ? { accept: 'text/event-stream' } : {}) }, deadlinesFor(endpoint.tier, services.timeouts, false));
  const record = (outcome: Outcome, usage: ReturnType<typeof speechUsage> | null): void =>
    recordAudioUsage(services, { requestId: req.requestId, endpoint, account, route: 'audio', outcome, usage, started: deadline.started });
  try {
    const res = await response;
    req.log.upstreamMs = performance.now() - deadline.started;
    deadline.done();
    await pipeToClient(req, reply, res, sse, (piped) => record(piped.outcome, piped.outcome === 'completed' ? speechUsage(speech.input, sse ? piped.kept : null) : null));
  } catch (err) {
    deadline.done();
    const e = deadline.failure(err);
    record(req.aborted ? 'aborted' : e.code === 'timeout' ? 'timeout' : 'error', null);
    throw e;
  }
}

export function audioRoutes(services: AudioServices): RouteDef[] {
  return [
    uploadRoute(services, 'transcriptions'),
    uploadRoute(services, 'translations'),
    speechRoute(services),
    projectUploadRoute(services, 'transcriptions'),
    projectUploadRoute(services, 'translations'),
    projectSpeechRoute(services),
  ];
}
