/**
 * The floor of the execution bench (bench/exec.ts): a plain process of the gateway's kind (Node, its own
 * core) that echoes. A `ws` WebSocket server sends every message back as it came; the HTTP server on the
 * same port answers any request with the body it received (a POST) or a short text (a GET), so the
 * bench can time one WebSocket round trip, and the two HTTP requests an invocation's client makes,
 * with nothing of the gateway in the path.
 *   node dist/bench/exec-echo.js --port 0      (prints "exec echo listening on http://127.0.0.1:PORT")
 */
import { createServer } from 'node:http';
import { WebSocketServer } from 'ws';

const portArg = process.argv.indexOf('--port');
const port = portArg >= 0 ? Number(process.argv[portArg + 1] ?? 0) : 0;

const server = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const body = req.method === 'GET' ? Buffer.from('data: {"type":"status","status":"completed"}\n\ndata: [DONE]\n\n') : Buffer.concat(chunks);
    res.writeHead(req.method === 'GET' ? 200 : 201, { 'content-type': req.method === 'GET' ? 'text/event-stream' : 'application/json', 'content-length': body.length });
    res.end(body);
  });
});
server.keepAliveTimeout = 60_000;
const wss = new WebSocketServer({ server });
wss.on('connection', (ws) => ws.on('message', (data, isBinary) => ws.send(data, { binary: isBinary })));
server.listen(port, '127.0.0.1', () => {
  const addr = server.address();
  const actual = typeof addr === 'object' && addr ? addr.port : port;
  process.stdout.write(`exec echo listening on http://127.0.0.1:${actual}\n`);
});
for (const sig of ['SIGTERM', 'SIGINT'] as const) process.on(sig, () => process.exit(0));
