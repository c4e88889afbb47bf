import uWS from 'uWebSockets.js';
import type { HttpRequest, HttpResponse, TemplatedApp } from 'uWebSockets.js';
import { planChatTurn, renderCompletion, totalDelayMs } from './chat-completion.js';
import { parseChatRequest } from './chat-request.js';
import { asPlannerRequest } from './planner.js';
import { buildStreamTicks, delayBeforeTick } from './chat-stream.js';
import { handleSpeech, handleTranscription, type SimReply } from './audio.js';
import { handleEmbeddings } from './embeddings.js';
import { handleRerank, handleScore } from './rerank.js';
import { handleResponses } from './responses.js';
import { SimError } from './errors.js';
import { Exchange } from './exchange.js';
import { parseKnobs, type Knobs } from './knobs.js';
import { ModelRegistry } from './models.js';
import { registerRealtime } from './realtime.js';
import { RequestLog } from './request-log.js';
import { misbehave } from './tool-misbehaviour.js';

export interface SimulatorOptions {
  host?: string;
  port?: number;
  /** Extra model names treated as reasoning models (besides names containing "reason"/"think"). */
  reasoningModels?: string[];
}

export interface RunningSimulator {
  port: number;
  /** Base URL including /v1, ready for an OpenAI client's baseURL. */
  url: string;
  close(): Promise<void>;
}

const DEFAULT_LOG_LIMIT = 20;

/** uWS has app.close() (closes every socket, idle keep-alives included) but its typings omit it. */
interface ClosableApp {
  close?: () => void;
}

function collectHeaders(req: HttpRequest): Record<string, string> {
  const headers: Record<string, string> = {};
  req.forEach((k, v) => {
    headers[k] = k in headers ? `${headers[k]}, ${v}` : v;
  });
  return headers;
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new SimError(400, 'Request body is not valid JSON', 'invalid_json');
  }
}

function simulatedError(knobs: Knobs, status: number): SimError {
  const headers: [string, string][] = knobs.retryAfter !== null ? [['retry-after', String(knobs.retryAfter)]] : [];
  if (knobs.errorCode === 'context_length_exceeded') {
    // Mirrors vLLM's wording, which gateways sometimes pattern-match.
    const message =
      "This model's maximum context length is 4096 tokens. However, you requested 8192 tokens " +
      '(8000 in the messages, 192 in the completion). Please reduce the length of the messages or completion.';
    return new SimError(status, message, 'context_length_exceeded', 'messages', headers);
  }
  return new SimError(status, `Simulated error with status ${status}`, knobs.errorCode ?? 'simulated_error', null, headers);
}

/** What every route of one simulator shares. */
interface Simulator {
  readonly app: TemplatedApp;
  readonly log: RequestLog;
  /** The models seen so far (GET /v1/models lists them), and which of them reason. */
  readonly models: ModelRegistry;
  /** Exchanges still open, which close() cancels. */
  readonly active: Set<Exchange>;
}

type PostHandler = (ex: Exchange, body: unknown, knobs: Knobs) => void;

export function startSimulator(opts: SimulatorOptions = {}): Promise<RunningSimulator> {
  const sim: Simulator = {
    app: uWS.App(),
    log: new RequestLog(),
    models: new ModelRegistry(opts.reasoningModels ?? []),
    active: new Set<Exchange>(),
  };
  registerChatCompletions(sim);
  post(sim, '/v1/embeddings', (ex, body, knobs) => {
    const result = handleEmbeddings(body, knobs);
    sim.models.note(result.model);
    ex.sendJson(200, JSON.stringify(result));
  });
  registerRerankAndScore(sim);
  registerResponses(sim);
  registerAudio(sim);
  registerRealtime(sim.app, (headers) => sim.log.record('GET', '/v1/realtime', headers));
  get(sim, '/v1/models', () => [200, JSON.stringify(sim.models.list())]);
  get(sim, '/healthz', () => [200, '{"status":"ok"}']);
  registerIntrospection(sim);
  sim.app.any('/*', (res, req) => {
    const method = req.getCaseSensitiveMethod();
    const url = req.getUrl();
    const ex = new Exchange(res, sim.log.record(method, url, collectHeaders(req)), () => undefined);
    ex.sendError(new SimError(404, `Unknown route: ${method} ${url}`, 'not_found'));
  });
  return listen(sim, opts.host ?? '127.0.0.1', opts.port ?? 0);
}

/** Starts a logged exchange for a POST route; the handler runs once the body is in. */
function post(sim: Simulator, path: string, handle: PostHandler): void {
  sim.app.post(path, (res: HttpResponse, req: HttpRequest) => {
    const headers = collectHeaders(req);
    const entry = sim.log.record('POST', path, headers);
    const ex = new Exchange(res, entry, (done) => sim.active.delete(done));
    sim.active.add(ex);
    ex.readBody((text) => {
      try {
        answerPost(ex, headers, text, handle);
      } catch (err) {
        ex.sendError(asSimError(err));
      }
    });
  });
}

/** The knobs' simulated error first, then a body that is not JSON, then the route's own answer. */
function answerPost(ex: Exchange, headers: Record<string, string>, text: string, handle: PostHandler): void {
  let body: unknown = undefined;
  let badJson: SimError | null = null;
  try {
    body = parseJson(text);
  } catch (err) {
    if (!(err instanceof SimError)) throw err;
    badJson = err;
  }
  // A simulated error fires even for unparseable bodies: it stands in for an upstream that never looked.
  const knobs = parseKnobs(headers, body);
  if (knobs.errorStatus !== null) throw simulatedError(knobs, knobs.errorStatus);
  if (badJson) throw badJson;
  handle(ex, body, knobs);
}

/** A SimError as it is; anything else (a bug) as a 500 internal_error. */
function asSimError(err: unknown): SimError {
  return err instanceof SimError ? err : new SimError(500, err instanceof Error ? err.message : String(err), 'internal_error');
}

/** GETs answer synchronously inside the handler, so no abort handler or cork is needed. */
function get(sim: Simulator, path: string, respond: (req: HttpRequest) => [number, string]): void {
  sim.app.get(path, (res, req) => {
    const entry = sim.log.record('GET', path, collectHeaders(req));
    const [status, body] = respond(req);
    const ex = new Exchange(res, entry, () => undefined);
    ex.sendJson(status, body);
  });
}

/** Sends a JSON body, after x-sim-delay-ms when the knobs ask for one. */
function sendAfterDelay(ex: Exchange, knobs: Knobs, body: string): void {
  if (knobs.delayMs > 0) ex.later(knobs.delayMs, () => ex.sendJson(200, body));
  else ex.sendJson(200, body);
}

function registerChatCompletions(sim: Simulator): void {
  let completionSeq = 0;
  post(sim, '/v1/chat/completions', (ex, body, knobs) => {
    // The multimodel route's planner prompt is answered with a deterministic plan (planner.ts).
    const req = parseChatRequest(asPlannerRequest(body));
    sim.models.note(req.model);
    const turn = misbehave(planChatTurn(req, knobs, { reasons: sim.models.reasons(req.model) }), knobs, body);
    const id = `chatcmpl-sim-${++completionSeq}`;
    const created = Math.floor(Date.now() / 1000);
    if (req.stream) {
      const ticks = buildStreamTicks(turn, { id, created, includeUsage: req.includeUsage });
      ex.stream(ticks, (t) => delayBeforeTick(t, knobs), knobs.failAfter);
      return;
    }
    const delay = totalDelayMs(turn, knobs);
    const respond = (): void => {
      if (knobs.failAfter !== null) ex.kill();
      else ex.sendJson(200, JSON.stringify(renderCompletion(turn, id, created)));
    };
    if (delay > 0) ex.later(delay, respond);
    else respond();
  });
}

/** vLLM serves both with and without the /v1 prefix; x-sim-delay-ms delays the answer. */
function registerRerankAndScore(sim: Simulator): void {
  let rerankSeq = 0;
  for (const path of ['/v1/rerank', '/rerank']) post(sim, path, (ex, body, knobs) => sendAfterDelay(ex, knobs, JSON.stringify(handleRerank(body, ++rerankSeq))));
  for (const path of ['/v1/score', '/score']) {
    post(sim, path, (ex, body, knobs) => sendAfterDelay(ex, knobs, JSON.stringify(handleScore(body, ++rerankSeq, Math.floor(Date.now() / 1000)))));
  }
}

/** A server that speaks the Responses API itself (the gateway's upstream.api: responses). */
function registerResponses(sim: Simulator): void {
  let responseSeq = 0;
  post(sim, '/v1/responses', (ex, body, knobs) => {
    const { model, answer } = handleResponses(body, knobs, (m) => sim.models.reasons(m), ++responseSeq, Math.floor(Date.now() / 1000));
    sim.models.note(model);
    if (answer.kind === 'stream') ex.stream(answer.ticks, (t) => delayBeforeTick(t, knobs), knobs.failAfter);
    else sendAfterDelay(ex, knobs, answer.body);
  });
}

function registerAudio(sim: Simulator): void {
  upload(sim, '/v1/audio/transcriptions', 'transcribe');
  upload(sim, '/v1/audio/translations', 'translate');
  post(sim, '/v1/audio/speech', (ex, body, knobs) => sendAudio(ex, handleSpeech(body), knobs));
}

/** Multipart routes: the body is read as bytes and logged as a JSON summary of its parts. */
function upload(sim: Simulator, path: string, task: 'transcribe' | 'translate'): void {
  sim.app.post(path, (res: HttpResponse, req: HttpRequest) => {
    const headers = collectHeaders(req);
    const ex = new Exchange(res, sim.log.record('POST', path, headers), (done) => sim.active.delete(done));
    sim.active.add(ex);
    ex.readRaw((body) => {
      try {
        const headerKnobs = parseKnobs(headers, null);
        if (headerKnobs.errorStatus !== null) throw simulatedError(headerKnobs, headerKnobs.errorStatus);
        const { reply, log: summary, sim: formSim } = handleTranscription(task, headers['content-type'], body);
        if (ex.entry) ex.entry.body = summary;
        const knobs = formSim === undefined ? headerKnobs : parseKnobs(headers, { sim: formSim });
        if (knobs.errorStatus !== null) throw simulatedError(knobs, knobs.errorStatus);
        sendAudio(ex, reply, knobs);
      } catch (err) {
        ex.sendError(asSimError(err));
      }
    });
  });
}

function sendAudio(ex: Exchange, r: SimReply, knobs: Knobs): void {
  const respond = (): void => {
    if (r.kind === 'body') ex.sendBody(200, r.contentType, r.body);
    else ex.stream(r.ticks, (t) => (t === 0 ? 0 : knobs.delayMs), knobs.failAfter);
  };
  if (knobs.delayMs > 0 && r.kind === 'body') ex.later(knobs.delayMs, respond);
  else respond();
}

/** Introspection routes are not logged: reading the log must not change it. */
function registerIntrospection(sim: Simulator): void {
  sim.app.get('/__sim/requests', (res, req) => {
    const raw = req.getQuery('limit');
    const limit = raw && /^\d+$/.test(raw) ? Number(raw) : DEFAULT_LOG_LIMIT;
    new Exchange(res, null, () => undefined).sendJson(200, JSON.stringify({ data: sim.log.recent(limit) }));
  });
  sim.app.del('/__sim/requests', (res) => {
    sim.log.clear();
    new Exchange(res, null, () => undefined).sendJson(200, '{"cleared":true}');
  });
}

function listen(sim: Simulator, host: string, requestedPort: number): Promise<RunningSimulator> {
  return new Promise((resolve, reject) => {
    sim.app.listen(host, requestedPort, (socket) => {
      if (!socket) {
        reject(new Error(`simulator: could not listen on ${host}:${requestedPort}`));
        return;
      }
      const port = uWS.us_socket_local_port(socket);
      const urlHost = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host.includes(':') ? `[${host}]` : host;
      let closed: Promise<void> | null = null;
      resolve({
        port,
        url: `http://${urlHost}:${port}/v1`,
        close: () => {
          closed ??= new Promise<void>((done) => {
            uWS.us_listen_socket_close(socket);
            for (const ex of sim.active) ex.cancel();
            sim.active.clear();
            const closable: ClosableApp = sim.app as unknown as ClosableApp;
            if (typeof closable.close === 'function') closable.close();
            // Let uWS run its close callbacks before callers tear anything else down.
            setImmediate(done);
          });
          return closed;
        },
      });
    });
  });
}
