import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';

/**
 * A tiny upstream MCP server of the tests' own (the SDK 1.x server over Streamable HTTP, with sessions)
 * whose one tool, `whoami`, answers with the Authorization header of the request that carried the call:
 * it shows whose credentials a gateway sent.
 */
export async function startHeaderEcho(): Promise<{ url: string; close(): Promise<void> }> {
  const sessions = new Map<string, { server: McpServer; transport: StreamableHTTPServerTransport }>();

  const newSession = async () => {
    const server = new McpServer({ name: 'header-echo', version: '1.0.0' });
    server.registerTool('whoami', { description: 'Answers with the Authorization header of this call' }, async (extra) => {
      const header = extra.requestInfo?.headers.authorization;
      return { content: [{ type: 'text', text: (Array.isArray(header) ? header.join(', ') : header) ?? '(no authorization header)' }] };
    });
    const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (sessionId) => void sessions.set(sessionId, { server, transport }),
    });
    transport.onclose = () => {
      if (transport.sessionId) sessions.delete(transport.sessionId);
    };
    await server.connect(transport);
    return transport;
  };

  const httpServer = http.createServer(async (request, response) => {
    try {
      const chunks: Buffer[] = [];
      for await (const chunk of request) chunks.push(chunk as Buffer);
      const body = chunks.length > 0 ? JSON.parse(Buffer.concat(chunks).toString('utf8')) : undefined;
      const sessionId = request.headers['mcp-session-id'];
      const known = typeof sessionId === 'string' ? sessions.get(sessionId) : undefined;
      if (known) return await known.transport.handleRequest(request, response, body);
      if (request.method === 'POST' && isInitializeRequest(body)) return await (await newSession()).handleRequest(request, response, body);
      response.writeHead(typeof sessionId === 'string' ? 404 : 400, { 'Content-Type': 'application/json' });
      response.end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32000, message: 'No such session' }, id: null }));
    } catch (error) {
      if (!response.headersSent) response.writeHead(500);
      response.end(String(error));
    }
  });
  await new Promise<void>((resolve) => httpServer.listen(0, '127.0.0.1', resolve));
  const { port } = httpServer.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}/mcp`,
    close: async () => {
      await Promise.all([...sessions.values()].map(({ server }) => server.close().catch(() => {})));
      httpServer.closeAllConnections();
      await new Promise<void>((resolve) => httpServer.close(() => resolve()));
    },
  };
}
