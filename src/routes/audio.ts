/**
 * SPEC "Audio": POST /{project}/{endpoint}/v1/audio/transcriptions, /translations (multipart, streamed to
 * the endpoint's upstream as it arrives) and /speech (JSON). Same key, limits, budgets and accounting as
 * chat; the response comes back as the model server returned it (json, text, srt, vtt, verbose_json,
 * audio bytes or SSE), one usage row per request (route `audio`). The same three under /{project}/v1
 * pick the endpoint by the `model` field instead of a slug (issue 20; core/models/resolve-model.ts). The
 * routes admit the request and read the body; the call itself is app/audio/audio-requests.ts.
 */
import type { Readable } from 'node:stream';
import type { AudioConfig } from '../config.js';
import type { AuthenticatedKey } from '../core/auth/authenticate.js';
import { GatewayError } from '../errors.js';
import type { RouteContext, RouteDef } from '../http/server.js';
import { checkTranscriptionField, parseSpeechRequest } from '../schemas/audio.js';
import { readModelField } from './audio-model-field.js';
import { forwardUpload, type ForwardedUpload } from './audio-upload.js';
import { serveSpeech, serveTranscription, type AudioAdmitted, type SpeechBody } from '../app/audio/audio-requests.js';
import type { ChatServices } from '../app/chat/chat-dispatch.js';
import { requireBudget, type EndpointAccess } from '../app/endpoint-access.js';
import { keyed, requireEndpoint, requireModel, wrongEndpointKind } from './guard.js';
import { withArticle } from '../core/article.js';

export interface AudioServices extends ChatServices {
  readonly audio: AudioConfig;
}

const KIND_NEEDED = { transcriptions: 'transcription', translations: 'transcription', speech: 'speech' } as const;
type AudioRoute = keyof typeof KIND_NEEDED;

/** Key, endpoint of the right kind and status, budget: in that order (docs/decisions.md "Order of checks"). */
function admit(ctx: RouteContext, services: ChatServices, auth: AuthenticatedKey, route: AudioRoute): AudioAdmitted {
  return admitEndpoint(ctx, services, auth, requireEndpoint(ctx.req, services, auth), route);
}

/** The endpoint's checks, whether a slug or the `model` field named it. */
function admitEndpoint(ctx: RouteContext, services: ChatServices, auth: AuthenticatedKey, access: EndpointAccess, route: AudioRoute): AudioAdmitted {
  const { endpoint } = access;
  const needed = KIND_NEEDED[route];
  if (endpoint.kind !== needed) {
    throw wrongEndpointKind(endpoint, `/v1/audio/${route} needs ${withArticle(needed)} endpoint`);
  }
  if (endpoint.status !== 'active') {
    throw new GatewayError('endpoint_unavailable', { message: `Endpoint ${endpoint.slug} is ${endpoint.status}, not active.` });
  }
  requireBudget(ctx, services, auth, access);
  return { endpoint, account: { projectId: auth.project.id, workspaceId: access.workspaceId, keyId: auth.key.id } };
}

/** Project-level routes: the endpoint the body's `model` names, of the kind the route serves. */
function admitModel(ctx: RouteContext, services: ChatServices, auth: AuthenticatedKey, model: string, route: AudioRoute): AudioAdmitted {
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
      await serveTranscription(services, ctx, route, admitted, await startUpload(ctx, route, admitted, source));
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
      const admitted = admitModel(ctx, services, auth, field.model, route);
      await serveTranscription(services, ctx, route, admitted, await startUpload(ctx, route, admitted, field.body));
    },
  });
}

async function readSpeech(ctx: RouteContext): Promise<SpeechBody> {
  const parsed = await ctx.req.json();
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw new GatewayError('invalid_request', { message: 'The request body must be a JSON object.' });
  }
  return { raw: await ctx.req.body(), parsed: parsed as Record<string, unknown>, speech: parseSpeechRequest(parsed) };
}

/** The upload re-encoded for the upstream as it arrives (audio-upload.ts); resolves once its file part begins. */
async function startUpload(ctx: RouteContext, route: UploadRoute, admitted: AudioAdmitted, source: Readable): Promise<ForwardedUpload> {
  const task = route === 'transcriptions' ? 'transcribe' : 'translate';
  const upload = forwardUpload(source, ctx.req.header('content-type'), {
    upstreamModel: admitted.endpoint.upstream.model,
    checkField: (name, value) => checkTranscriptionField(name, value, task),
  });
  await upload.fileStarted;
  return upload;
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
