/**
 * SSRF regression corpus. Issue 19 (defect 3): `https://[::127.0.0.1]/hook`, `[::7f00:1]` and `[::a00:1]`
 * were accepted as webhook and image URLs and the gateway tried to connect, because the address policy
 * only refused what ipaddr.js does not call `unicast`, and IPv4-compatible ::/96 is `unicast` to it.
 *
 * Every target below is refused on a gateway with the production defaults (https only, public addresses
 * only): as a webhook URL (create and update: 400 url_not_allowed, param url) and as an image URL (400
 * naming the URL). "Before any connection" is shown three ways, none of them a packet capture:
 *   - the refusal comes from the URL check that precedes every request (image messages read "the URL
 *     must ...", never "the connection was refused at connect" nor "the connection failed");
 *   - targets that can reach this machine (loopback, 0.0.0.0, ::, mapped, names in /etc/hosts) carry
 *     the port of a raw TCP recorder listening on every interface, which must count no connection;
 *   - each answer comes back well within the fetch timeout, so nothing waited on a connect.
 * Redirects need a server the gateway may fetch from first. No public address routes here, so that
 * server is on 127.0.0.1 and the gateway that fetches from it must allow private targets, under which
 * loopback and RFC 1918 hops are allowed by design. The redirect targets are therefore the ones refused
 * under both policies: unspecified (0.0.0.0, ::, ::ffff:0.0.0.0, which Linux connects to the local host:
 * the control test shows the recorder does see such a connection), broadcast and multicast. Every hop is
 * checked by the same function with the same policy as the first URL, which the corpus covers in full.
 */
import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createTcpServer, type AddressInfo, type Server as TcpServer } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { audioTestConfig } from '../helpers/audio-config.js';
import { makeKeys, PROJECT, type TestKeys } from '../helpers/configs.js';
import { advanceClock, call, errorOf, expectError, type JsonResponse } from '../helpers/http.js';
import { startGatewayProcess, startSimulatorProcess, type GatewayProcess, type SimulatorProcess } from '../helpers/processes.js';
import { simSeq } from '../helpers/simulator-log.js';

const FETCH_TIMEOUT_MS = 5000;
const PUBLIC_URL = 'https://93.184.216.34/hooks';

/** [what, URL (PORT is the recorder's port), part of the reason the refusal must give]. */
type Target = readonly [what: string, url: string, why: string];

const LOOPBACK = 'a loopback address';
const UNSPECIFIED = 'the unspecified address';
const CORPUS: readonly Target[] = [
  ['IPv4 loopback', 'https://127.0.0.1:PORT/hook', LOOPBACK],
  ['IPv4 loopback beyond .1', 'https://127.0.0.2:PORT/hook', LOOPBACK],
  ['loopback as one decimal number', 'https://2130706433:PORT/hook', LOOPBACK],
  ['loopback as one hex number', 'https://0x7f000001:PORT/hook', LOOPBACK],
  ['loopback in hex, short form', 'https://0x7f.1:PORT/hook', LOOPBACK],
  ['loopback in octal', 'https://0177.0.0.1:PORT/hook', LOOPBACK],
  ['loopback, short form', 'https://127.1:PORT/hook', LOOPBACK],
  ['loopback, percent-encoded', 'https://127.0.0.%31:PORT/hook', LOOPBACK],
  ['loopback in full-width digits', 'https://１２７.0.0.1:PORT/hook', LOOPBACK],
  ['loopback with a trailing dot', 'https://127.0.0.1.:PORT/hook', LOOPBACK],
  ['IPv6 loopback', 'https://[::1]:PORT/hook', LOOPBACK],
  ['IPv6 loopback, uncompressed', 'https://[0:0:0:0:0:0:0:1]:PORT/hook', LOOPBACK],
  ['localhost', 'https://localhost:PORT/hook', LOOPBACK],
  ['LOCALHOST in capitals', 'https://LOCALHOST:PORT/hook', LOOPBACK],
  ['the unspecified IPv4 address', 'https://0.0.0.0:PORT/hook', UNSPECIFIED],
  ['the unspecified IPv4 address as 0', 'https://0:PORT/hook', UNSPECIFIED],
  ['the unspecified IPv6 address', 'https://[::]:PORT/hook', UNSPECIFIED],
  ['a "this network" address', 'https://0.1.2.3/hook', 'a "this network" address'],
  ['a private 10/8 address', 'https://10.0.0.5/hook', 'a private address'],
  ['a private 172.16/12 address', 'https://172.20.1.1/hook', 'a private address'],
  ['a private 192.168/16 address', 'https://192.168.0.10/hook', 'a private address'],
  ['a carrier-grade NAT address', 'https://100.64.1.1/hook', 'a carrier-grade NAT address'],
  ['the cloud metadata service', 'https://169.254.169.254/latest/meta-data/', 'a link-local address'],
  ['the cloud metadata service in hex', 'https://0xa9fea9fe/latest/meta-data/', 'a link-local address'],
  ['the EC2 IPv6 metadata service', 'https://[fd00:ec2::254]/latest/meta-data/', 'a unique-local address'],
  ['an IPv6 unique-local address', 'https://[fc00::1]/hook', 'a unique-local address'],
  ['an IPv6 link-local address', 'https://[fe80::1]/hook', 'a link-local address'],
  ['an IPv6 site-local address', 'https://[fec0::1]/hook', 'a site-local address'],
  ['IPv4-mapped loopback', 'https://[::ffff:127.0.0.1]:PORT/hook', 'an IPv4-mapped IPv6 address'],
  ['IPv4-mapped loopback, uncompressed', 'https://[0:0:0:0:0:ffff:7f00:1]:PORT/hook', 'an IPv4-mapped IPv6 address'],
  ['IPv4-mapped unspecified', 'https://[::ffff:0.0.0.0]:PORT/hook', 'an IPv4-mapped IPv6 address'],
  ['IPv4-mapped metadata service', 'https://[::ffff:169.254.169.254]/hook', 'an IPv4-mapped IPv6 address'],
  ['IPv4-mapped public address', 'https://[::ffff:8.8.8.8]/hook', 'an IPv4-mapped IPv6 address'],
  ['IPv4-compatible loopback (issue 19)', 'https://[::127.0.0.1]:PORT/hook', 'an IPv4-compatible IPv6 address'],
  ['IPv4-compatible loopback in hex (issue 19)', 'https://[::7f00:1]:PORT/hook', 'an IPv4-compatible IPv6 address'],
  ['IPv4-compatible 10.0.0.1 (issue 19)', 'https://[::a00:1]/hook', 'an IPv4-compatible IPv6 address'],
  ['IPv4-compatible metadata service', 'https://[::a9fe:a9fe]/hook', 'an IPv4-compatible IPv6 address'],
  ['NAT64 loopback', 'https://[64:ff9b::127.0.0.1]/hook', 'a NAT64 address'],
  ['NAT64 metadata service', 'https://[64:ff9b::a9fe:a9fe]/hook', 'a NAT64 address'],
  ['NAT64 local-use prefix', 'https://[64:ff9b:1::a00:1]/hook', 'a NAT64 address'],
  ['6to4 carrying loopback', 'https://[2002:7f00:1::1]/hook', 'a 6to4 address'],
  ['6to4 carrying 10.0.0.1', 'https://[2002:a00:1::]/hook', 'a 6to4 address'],
  ['Teredo', 'https://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/hook', 'a Teredo address'],
  ['IPv4 multicast', 'https://224.0.0.251/hook', 'a multicast address'],
  ['IPv6 multicast', 'https://[ff02::1]/hook', 'a multicast address'],
  ['the broadcast address', 'https://255.255.255.255/hook', 'the broadcast address'],
  ['class E', 'https://240.0.0.1/hook', 'a reserved address'],
  ['IPv4 documentation (TEST-NET-1)', 'https://192.0.2.10/hook', 'a documentation address'],
  ['IPv4 documentation (TEST-NET-3)', 'https://203.0.113.9/hook', 'a documentation address'],
  ['IPv6 documentation 2001:db8::/32', 'https://[2001:db8::1]/hook', 'a documentation address'],
  ['IPv6 documentation 3fff::/20', 'https://[3fff::1]/hook', 'a documentation address'],
  ['benchmarking', 'https://198.18.0.1/hook', 'a benchmarking address'],
  ['SRv6', 'https://[5f00::1]/hook', 'a segment-routing address'],
  ['IPv6 outside 2000::/3', 'https://[4000::1]/hook', 'outside the global unicast space'],
  ['credentials in the URL', 'https://user:pass@93.184.216.34/hook', 'must not carry credentials'],
  ['a user name in the URL', 'https://user@93.184.216.34/hook', 'must not carry credentials'],
  ['plain http', 'http://93.184.216.34/hook', 'must use https'],
  ...hostsFileLoopbackNames().map((name): Target => [`${name} from /etc/hosts`, `https://${name}:PORT/hook`, LOOPBACK]),
];

/** Names other than localhost that this machine's /etc/hosts maps to loopback (none on some machines). */
function hostsFileLoopbackNames(): string[] {
  let text = '';
  try {
    text = readFileSync('/etc/hosts', 'utf8');
  } catch {
    return [];
  }
  const names = text.split('\n').flatMap((line) => {
    const [address = '', ...aliases] = line.replace(/#.*/, '').trim().split(/\s+/);
    return address.startsWith('127.') || address === '::1' ? aliases : [];
  });
  return [...new Set(names)].filter((n) => /^[a-z][a-z0-9-]*$/i.test(n) && n.toLowerCase() !== 'localhost' && !n.startsWith('ip6-'));
}

/** Redirect targets refused under every policy, so also by the gateway that may fetch from 127.0.0.1. */
const NEVER_TARGETS: readonly Target[] = [
  ['0.0.0.0', 'http://0.0.0.0:PORT/secret', UNSPECIFIED],
  ['0 (0.0.0.0)', 'http://0:PORT/secret', UNSPECIFIED],
  ['[::]', 'http://[::]:PORT/secret', UNSPECIFIED],
  ['[::ffff:0.0.0.0]', 'http://[::ffff:0.0.0.0]:PORT/secret', UNSPECIFIED],
  ['the broadcast address', 'http://255.255.255.255:PORT/secret', 'the broadcast address'],
  ['a multicast address', 'http://224.0.0.1:PORT/secret', 'a multicast address'],
];

let sim: SimulatorProcess;
let strict: GatewayProcess;
let relaxed: GatewayProcess;
let keys: TestKeys;
let recorder: TcpServer;
let connections = 0;
let allowed: Server;
let allowedOrigin: string;

const at = (template: string): string => template.replace('PORT', String((recorder.address() as AddressInfo).port));

/** The test server the relaxed gateway may reach: /redirect?to=<url> answers 302 to that URL. */
function serveAllowed(req: IncomingMessage, res: ServerResponse): void {
  const url = new URL(req.url ?? '/', 'http://127.0.0.1');
  req.resume();
  if (url.pathname === '/redirect') res.writeHead(302, { location: url.searchParams.get('to') ?? '/' }).end();
  else res.writeHead(404).end();
}

beforeAll(async () => {
  keys = makeKeys();
  // Listening on :: (dual stack) accepts connections to 127.0.0.1, ::1, 0.0.0.0 and their mapped forms.
  recorder = createTcpServer((socket) => {
    connections += 1;
    socket.destroy();
  });
  await new Promise<void>((r) => recorder.listen(0, '::', r));
  allowed = createServer(serveAllowed);
  await new Promise<void>((r) => allowed.listen(0, '127.0.0.1', r));
  allowedOrigin = `http://127.0.0.1:${(allowed.address() as AddressInfo).port}`;
  sim = await startSimulatorProcess();
  const media = { fetch_timeout_ms: FETCH_TIMEOUT_MS, max_redirects: 3 };
  [strict, relaxed] = await Promise.all([
    startGatewayProcess(audioTestConfig(sim.url, keys, { media })),
    startGatewayProcess(audioTestConfig(sim.url, keys, { security: { allow_private_targets: true, allow_http_targets: true }, media })),
  ]);
});

afterAll(async () => {
  await strict?.stop();
  await relaxed?.stop();
  await sim?.stop();
  allowed?.closeAllConnections();
  await new Promise((r) => allowed?.close(r));
  await new Promise((r) => recorder?.close(r));
});

// Control-plane routes share 60 requests a minute per project (SPEC Limits): each test starts a fresh window.
beforeEach(async () => {
  await advanceClock(strict.url, 61_000);
  await advanceClock(relaxed.url, 61_000);
});

const hooks = (gw: GatewayProcess): string => `${gw.url}/${PROJECT}/v1/webhooks`;
const messageOf = (res: JsonResponse): string => String(errorOf(res).message);

async function createHook(gw: GatewayProcess, url: string): Promise<JsonResponse> {
  const res = await call(hooks(gw), { key: keys.full, body: { url, events: ['exec.completed'] } });
  // Never expected in the corpus; removed so a wrongly accepted target cannot fill the project's 20 slots.
  if (res.status === 201) await call(`${hooks(gw)}/${(res.body as { id: string }).id}`, { key: keys.full, method: 'DELETE' });
  return res;
}

function chatWithImage(gw: GatewayProcess, url: string): Promise<JsonResponse> {
  const content = [{ type: 'text', text: 'look' }, { type: 'image_url', image_url: { url } }];
  return call(`${gw.url}/${PROJECT}/vision/v1/chat/completions`, { key: keys.full, body: { model: 'm', messages: [{ role: 'user', content }] } });
}

/** Runs `act` and checks the recorder saw no connection meanwhile and the answer took no connect timeout. */
async function noConnection(act: () => Promise<JsonResponse>): Promise<JsonResponse> {
  const before = connections;
  const started = Date.now();
  const res = await act();
  expect(Date.now() - started).toBeLessThan(FETCH_TIMEOUT_MS);
  expect(connections).toBe(before);
  return res;
}

describe('webhook URLs on a gateway with the default policy', () => {
  it.each(CORPUS)('refuses %s at create with 400 url_not_allowed', async (_what, template, why) => {
    const res = await noConnection(() => createHook(strict, at(template)));
    expectError(res, 400, 'url_not_allowed', 'url');
    expect(messageOf(res)).toMatch(/^url must /);
    expect(messageOf(res)).toContain(why);
  });

  describe('at update', () => {
    let id = '';
    beforeAll(async () => {
      await advanceClock(strict.url, 61_000);
      const res = await call(hooks(strict), { key: keys.full, body: { url: PUBLIC_URL, events: ['exec.completed'] } });
      expect(res.status).toBe(201);
      id = (res.body as { id: string }).id;
    });

    it.each(CORPUS)('refuses %s at update with 400 url_not_allowed and keeps the old URL', async (_what, template, why) => {
      const res = await noConnection(() => call(`${hooks(strict)}/${id}`, { key: keys.full, method: 'PUT', body: { url: at(template) } }));
      expectError(res, 400, 'url_not_allowed', 'url');
      expect(messageOf(res)).toContain(why);
      expect(((await call(`${hooks(strict)}/${id}`, { key: keys.full })).body as { url: string }).url).toBe(PUBLIC_URL);
    });
  });
});

describe('image URLs on a gateway with the default policy', () => {
  it.each(CORPUS)('refuses %s with 400 naming the URL, without calling the model', async (_what, template, why) => {
    const url = at(template);
    const before = await simSeq(sim.url);
    const res = await noConnection(() => chatWithImage(strict, url));
    expectError(res, 400, 'invalid_request', 'messages[0].content[1].image_url.url');
    expect(messageOf(res)).toContain(`Could not fetch the image at ${url}: the URL must `);
    expect(messageOf(res)).toContain(why);
    expect(await simSeq(sim.url)).toBe(before);
  });
});

describe('redirects from an allowed server (gateway allowing private targets, see the header)', () => {
  it('reaches the recorder through a redirect to 127.0.0.1, so a connection would be counted (control)', async () => {
    const before = connections;
    const res = await chatWithImage(relaxed, `${allowedOrigin}/redirect?to=${encodeURIComponent(at('http://127.0.0.1:PORT/secret'))}`);
    expectError(res, 400, 'invalid_request', 'messages[0].content[1].image_url.url');
    expect(messageOf(res)).toContain('the connection failed');
    expect(connections).toBe(before + 1);
  });

  it.each(NEVER_TARGETS)('refuses an image that redirects to %s without fetching that hop', async (_what, template, why) => {
    const hop = at(template);
    const url = `${allowedOrigin}/redirect?to=${encodeURIComponent(hop)}`;
    const res = await noConnection(() => chatWithImage(relaxed, url));
    expectError(res, 400, 'invalid_request', 'messages[0].content[1].image_url.url');
    expect(messageOf(res)).toContain(`Could not fetch the image at ${url}: it redirects to ${new URL(hop).toString()}, which must not target`);
    expect(messageOf(res)).toContain(why);
  });

  it('refuses the same targets as webhook URLs even there', async () => {
    for (const [, template, why] of NEVER_TARGETS) {
      const res = await noConnection(() => createHook(relaxed, at(template)));
      expectError(res, 400, 'url_not_allowed', 'url');
      expect(messageOf(res)).toContain(why);
    }
  });

  it('does not follow a redirect when delivering a webhook test event', async () => {
    const target = `${allowedOrigin}/redirect?to=${encodeURIComponent(at('http://0.0.0.0:PORT/secret'))}`;
    const made = await call(hooks(relaxed), { key: keys.full, body: { url: target, events: ['exec.completed'] } });
    expect(made.status).toBe(201);
    const id = (made.body as { id: string }).id;
    const res = await noConnection(() => call(`${hooks(relaxed)}/${id}/test`, { key: keys.full, method: 'POST' }));
    expect(res.body).toMatchObject({ success: false, http_status: 302 });
    await call(`${hooks(relaxed)}/${id}`, { key: keys.full, method: 'DELETE' });
  });
});
