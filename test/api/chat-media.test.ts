/**
 * SPEC "Message object": image_url parts fetched server-side and inlined as data: URLs, through the
 * outbound guard shared with webhooks. A local image server plays the third party; one gateway relaxes
 * the guard (private targets and plain HTTP allowed, as tests need), the other only allows plain HTTP,
 * so loopback stays refused.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { audioTestConfig } from '../helpers/audio-config.js';
import { makeKeys, PROJECT, type TestKeys } from '../helpers/configs.js';
import { call, expectError } from '../helpers/http.js';
import { startGatewayProcess, startSimulatorProcess, type GatewayProcess, type SimulatorProcess } from '../helpers/processes.js';
import { lastSimRequest, simSeq } from '../helpers/simulator-log.js';

const PNG = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), Buffer.from('png body')]);
const WEBP = Buffer.concat([Buffer.from('RIFF\x10\x00\x00\x00WEBPVP8 ', 'latin1'), Buffer.alloc(8)]);

let sim: SimulatorProcess;
let relaxed: GatewayProcess;
let strict: GatewayProcess;
let keys: TestKeys;
let images: Server;
let origin: string;
const userAgents: string[] = [];
let inFlight = 0;
let maxInFlight = 0;
const held: (() => void)[] = [];

function serveImage(req: IncomingMessage, res: ServerResponse): void {
  userAgents.push(String(req.headers['user-agent']));
  const port = (images.address() as AddressInfo).port;
  const path = req.url ?? '';
  if (path.startsWith('/pair')) {
    // Held until two are in flight at once: sequential fetches would wait here until the fallback fires.
    inFlight += 1;
    maxInFlight = Math.max(maxInFlight, inFlight);
    const release = (): void => {
      inFlight -= 1;
      res.writeHead(200, { 'content-type': 'image/png' }).end(PNG);
    };
    held.push(release);
    if (inFlight >= 2) held.splice(0).forEach((r) => r());
    else setTimeout(() => held.splice(0).forEach((r) => r()), 1000);
    return;
  }
  const routes: Record<string, () => void> = {
    '/cat.png': () => res.writeHead(200, { 'content-type': 'application/octet-stream' }).end(PNG),
    '/pic.webp': () => res.writeHead(200).end(WEBP),
    '/hop': () => res.writeHead(302, { location: '/hop2' }).end(),
    '/hop2': () => res.writeHead(301, { location: `http://127.0.0.1:${port}/cat.png` }).end(),
    '/to-unspecified': () => res.writeHead(302, { location: `http://0.0.0.0:${port}/cat.png` }).end(),
    '/loop': () => res.writeHead(302, { location: '/loop' }).end(),
    '/text': () => res.writeHead(200, { 'content-type': 'image/png' }).end('not an image at all'),
    '/big.png': () => res.writeHead(200).end(Buffer.concat([PNG, Buffer.alloc(70 * 1024)])),
    '/missing': () => res.writeHead(404).end('no'),
    '/slow': () => undefined,
  };
  (routes[path] ?? routes['/missing'] ?? (() => undefined))();
}

beforeAll(async () => {
  keys = makeKeys();
  images = createServer(serveImage);
  await new Promise<void>((r) => images.listen(0, '127.0.0.1', r));
  origin = `http://127.0.0.1:${(images.address() as AddressInfo).port}`;
  sim = await startSimulatorProcess();
  const media = { fetch_timeout_ms: 400, max_image_bytes: 64 * 1024, max_redirects: 3, user_agent_contact: 'mailto:ops@example.test' };
  [relaxed, strict] = await Promise.all([
    startGatewayProcess(audioTestConfig(sim.url, keys, { security: { allow_private_targets: true, allow_http_targets: true }, media })),
    startGatewayProcess(audioTestConfig(sim.url, keys, { security: { allow_private_targets: false, allow_http_targets: true }, media })),
  ]);
});

afterAll(async () => {
  await relaxed?.stop();
  await strict?.stop();
  await sim?.stop();
  images?.closeAllConnections();
  await new Promise((r) => images?.close(r));
});

const image = (url: string): Record<string, unknown> => ({ type: 'image_url', image_url: { url } });
const chat = (gw: GatewayProcess, parts: Record<string, unknown>[], headers: Record<string, string> = {}) =>
  call(`${gw.url}/${PROJECT}/vision/v1/chat/completions`, { key: keys.full, headers, body: { model: 'm', messages: [{ role: 'user', content: [{ type: 'text', text: 'look' }, ...parts] }] } });

describe('image_url parts', () => {
  it('fetches the image and inlines it as a data: URL typed by its magic bytes, keeping every other byte', async () => {
    const raw = `{"model":"m","temperature":0.50,  "messages":[{"role":"user","content":[{"type":"text","text":"look"},{"type":"image_url","image_url":{"url":"${origin}/cat.png","detail":"low"}}]}]}`;
    const res = await call(`${relaxed.url}/${PROJECT}/vision/v1/chat/completions`, { key: keys.full, headers: { 'content-type': 'application/json' }, body: raw });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const sent = (await lastSimRequest(sim.url)).body;
    const dataUrl = `data:image/png;base64,${PNG.toString('base64')}`;
    expect(sent).toBe(raw.replace('"model":"m"', '"model":"sim-chat"').replace(/"messages":.*\}$/, `"messages":[{"role":"user","content":[{"type":"text","text":"look"},{"type":"image_url","image_url":{"url":"${dataUrl}","detail":"low"}}]}]}`));
    expect(userAgents[userAgents.length - 1]).toMatch(/^Switchboard\/\d+\.\d+\.\d+ \(\+https:\/\/\S+; mailto:ops@example\.test\)$/);
  });

  it('follows redirects, checking every hop', async () => {
    expect((await chat(relaxed, [image(`${origin}/hop`), image(`${origin}/pic.webp`)])).status).toBe(200);
    const sent = (await lastSimRequest(sim.url)).body;
    expect(sent).toContain('data:image/png;base64,');
    expect(sent).toContain('data:image/webp;base64,');
    expectError(await chat(relaxed, [image(`${origin}/to-unspecified`)]), 400, 'invalid_request', 'messages[0].content[1].image_url.url');
  });

  it('fetches the images of one request in parallel', async () => {
    maxInFlight = 0;
    expect((await chat(relaxed, [image(`${origin}/pair-a`), image(`${origin}/pair-b`)])).status).toBe(200);
    expect(maxInFlight).toBe(2);
  });

  it.each([
    ['not an image', '/text', 'not a PNG, JPEG, GIF or WebP'],
    ['too large', '/big.png', 'larger than 65536 bytes'],
    ['an HTTP error', '/missing', 'HTTP 404'],
    ['too slow', '/slow', 'did not answer within 400 ms'],
    ['a redirect loop', '/loop', 'redirects more than 3 times'],
  ])('returns 400 naming the URL for %s, without calling the model', async (_, path, reason) => {
    const before = await simSeq(sim.url);
    const res = await chat(relaxed, [image(`${origin}/cat.png`), image(`${origin}${path}`)]);
    expectError(res, 400, 'invalid_request', 'messages[0].content[2].image_url.url');
    const message = (res.body as { error: { message: string } }).error.message;
    expect(message).toContain(`${origin}${path}`);
    expect(message).toContain(reason);
    expect(await simSeq(sim.url)).toBe(before);
  });

  it('refuses loopback and private addresses unless the operator relaxed the guard', async () => {
    const res = await chat(strict, [image(`${origin}/cat.png`)]);
    expectError(res, 400, 'invalid_request', 'messages[0].content[1].image_url.url');
    expect((res.body as { error: { message: string } }).error.message).toContain('loopback');
  });

  it('sends the URL as it is with X-Service-Augment-Media-URL-Resolution: off', async () => {
    const res = await chat(strict, [image(`${origin}/cat.png`)], { 'x-service-augment-media-url-resolution': 'off' });
    expect(res.status).toBe(200);
    expect((await lastSimRequest(sim.url)).body).toContain(`"url":"${origin}/cat.png"`);
  });

  it('leaves data: URLs alone', async () => {
    const url = `data:image/png;base64,${PNG.toString('base64')}`;
    expect((await chat(strict, [image(url)])).status).toBe(200);
    expect((await lastSimRequest(sim.url)).body).toContain(url);
  });
});
