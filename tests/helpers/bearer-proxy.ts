import http from 'node:http';
import type net from 'node:net';

export interface BearerProxy {
  url: string;
  close(): Promise<void>;
}

/**
 * A loopback proxy that adds `Authorization: Bearer <token>` to every request and passes everything
 * else through as it is, the Host and Origin headers included, streaming both ways (an SSE response
 * reaches the client event by event). For clients that cannot send a token of their own.
 */
export async function startBearerProxy(target: string, token: string): Promise<BearerProxy> {
  // The target is a loopback server: its address, whatever name its URL gives it.
  const upstreamPort = new URL(target).port;
  const server = http.createServer((req, res) => {
    const forwarded = http.request(
      {
        host: '127.0.0.1',
        port: upstreamPort,
        method: req.method,
        path: req.url,
        headers: { ...req.headers, authorization: `Bearer ${token}` },
      },
      (reply) => {
        res.writeHead(reply.statusCode ?? 502, reply.headers);
        res.flushHeaders();
        reply.pipe(res);
      },
    );
    forwarded.on('error', (error) => {
      if (!res.headersSent) res.writeHead(502, { 'content-type': 'text/plain' });
      res.end(`proxy: ${error.message}`);
    });
    // A client that hangs up (the end of an SSE read) hangs up upstream too.
    res.on('close', () => forwarded.destroy());
    req.pipe(forwarded);
  });
  const sockets = new Set<net.Socket>();
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  return {
    url: `http://localhost:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
