/**
 * A real local webhook receiver for API tests: plain HTTP, or HTTPS with a throwaway self-signed
 * certificate made by openssl (the gateway trusts it through NODE_EXTRA_CA_CERTS). It records every
 * delivery and answers with whatever the test scripts (by attempt number), default 200.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer as createHttpServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';

export interface ReceivedDelivery {
  readonly headers: IncomingHttpHeaders;
  readonly rawBody: Buffer;
  readonly body: Record<string, unknown>;
}

export interface ScriptedResponse {
  readonly status: number;
  readonly body?: string;
  /** Delay before answering (to test the attempt timeout). */
  readonly delayMs?: number;
}

export interface Receiver {
  readonly url: string;
  readonly received: ReceivedDelivery[];
  /** The response for the n-th request (0-based). */
  respond(script: (n: number, delivery: ReceivedDelivery) => ScriptedResponse): void;
  /** Resolves once `count` requests have arrived; polls every 20 ms. */
  waitFor(count: number, timeoutMs?: number): Promise<ReceivedDelivery[]>;
  close(): Promise<void>;
}

export interface SelfSignedCert {
  readonly certFile: string;
  readonly keyFile: string;
}

/** A certificate for 127.0.0.1 and localhost, valid one day. */
export function makeSelfSignedCert(dir: string): SelfSignedCert {
  const certFile = join(dir, 'receiver-cert.pem');
  const keyFile = join(dir, 'receiver-key.pem');
  execFileSync('openssl', [
    'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '1',
    '-keyout', keyFile, '-out', certFile, '-subj', '/CN=localhost', '-addext', 'subjectAltName=IP:127.0.0.1,DNS:localhost',
  ], { stdio: 'ignore' });
  return { certFile, keyFile };
}

export async function startReceiver(options: { tls?: SelfSignedCert; path?: string } = {}): Promise<Receiver> {
  const received: ReceivedDelivery[] = [];
  let script: (n: number, d: ReceivedDelivery) => ScriptedResponse = () => ({ status: 200, body: 'ok' });
  const handler = (req: IncomingMessage, res: ServerResponse): void => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const rawBody = Buffer.concat(chunks);
      let body: Record<string, unknown> = {};
      try {
        body = JSON.parse(rawBody.toString('utf8')) as Record<string, unknown>;
      } catch {
        // recorded as {}; the test looks at rawBody
      }
      const delivery: ReceivedDelivery = { headers: req.headers, rawBody, body };
      const n = received.length;
      received.push(delivery);
      const answer = script(n, delivery);
      const send = (): void => {
        res.writeHead(answer.status, { 'content-type': 'text/plain' });
        res.end(answer.body ?? '');
      };
      // A held answer must not keep the test process alive; a client gone meanwhile is fine.
      if (answer.delayMs) setTimeout(send, answer.delayMs).unref();
      else send();
    });
  };
  const server = options.tls
    ? createHttpsServer({ cert: readFileSync(options.tls.certFile), key: readFileSync(options.tls.keyFile) }, handler)
    : createHttpServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `${options.tls ? 'https' : 'http'}://127.0.0.1:${port}${options.path ?? '/hooks'}`,
    received,
    respond(next) {
      script = next;
    },
    async waitFor(count, timeoutMs = 10_000) {
      const deadline = Date.now() + timeoutMs;
      while (received.length < count) {
        if (Date.now() > deadline) throw new Error(`receiver got ${received.length} of ${count} deliveries within ${timeoutMs} ms`);
        await new Promise((r) => setTimeout(r, 20));
      }
      return received.slice(0, count);
    },
    close() {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}
