import { Client as Sdk2Client, StreamableHTTPClientTransport as Sdk2Transport } from '@modelcontextprotocol/client';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

export const protocolVersion = '2025-11-25';

export interface SseEvent {
  id?: string;
  data: string;
}

/** Reads server-sent events from a response body, one at a time. */
export class SseReader {
  private buffer = '';
  private readonly reader: ReadableStreamDefaultReader<Uint8Array>;
  private readonly decoder = new TextDecoder();
  private pending?: Promise<ReadableStreamReadResult<Uint8Array>>;

  constructor(readonly response: Response) {
    this.reader = response.body!.getReader();
  }

  /** The next event that carries data (priming events included), or null when the stream ends. */
  async next(timeoutMs = 10_000): Promise<SseEvent | null> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const boundary = this.buffer.indexOf('\n\n');
      if (boundary >= 0) {
        const raw = this.buffer.slice(0, boundary);
        this.buffer = this.buffer.slice(boundary + 2);
        const event: SseEvent = { data: '' };
        let hasData = false;
        for (const line of raw.split('\n')) {
          if (line.startsWith('id:')) event.id = line.slice(3).trim();
          if (line.startsWith('data:')) {
            event.data += (hasData ? '\n' : '') + line.slice(5).replace(/^ /, '');
            hasData = true;
          }
        }
        if (hasData) return event;
        continue;
      }
      const remaining = deadline - Date.now();
      if (remaining <= 0) throw new Error('timed out waiting for an SSE event');
      let timer: NodeJS.Timeout | undefined;
      // A read that outlives a timeout is kept for the next call, so no chunk is ever lost.
      this.pending ??= this.reader.read();
      const chunk = await Promise.race([
        this.pending,
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new Error('timed out waiting for an SSE event')), remaining);
        }),
      ]).finally(() => clearTimeout(timer));
      this.pending = undefined;
      if (chunk.done) return null;
      this.buffer += this.decoder.decode(chunk.value, { stream: true }).replace(/\r\n/g, '\n');
    }
  }

  /** The next JSON-RPC message, skipping priming events. */
  async nextMessage(timeoutMs?: number): Promise<Record<string, any> | null> {
    for (;;) {
      const event = await this.next(timeoutMs);
      if (!event) return null;
      if (event.data.trim() === '') continue;
      return { ...JSON.parse(event.data), ...(event.id !== undefined ? { __eventId: event.id } : {}) };
    }
  }

  /**
   * The next JSON-RPC message that matches, skipping the others. Throws when the stream ends or the
   * time runs out first, so a wait for a message that never comes fails instead of spinning.
   */
  async nextMessageWhere(matches: (message: Record<string, any>) => boolean, timeoutMs = 10_000): Promise<Record<string, any>> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const message = await this.nextMessage(Math.max(1, deadline - Date.now()));
      if (!message) throw new Error('the stream ended before the awaited message arrived');
      if (matches(message)) return message;
    }
  }

  /** Every event up to the end of the stream (the response ends a response stream). */
  async readAll(timeoutMs?: number): Promise<SseEvent[]> {
    const events: SseEvent[] = [];
    for (let event = await this.next(timeoutMs); event; event = await this.next(timeoutMs)) events.push(event);
    return events;
  }

  /** Drops the stream; not awaited, since cancelling under a pending read can wait for the next chunk. */
  async close(): Promise<void> {
    void this.reader.cancel().catch(() => {});
  }
}

/** The JSON-RPC messages among events (priming events carry none). */
export const messagesOf = (events: SseEvent[]) => events.filter((event) => event.data.trim() !== '').map((event) => JSON.parse(event.data));

export interface RpcReply {
  status: number;
  headers: Headers;
  body: any;
}

/** A hand-driven MCP client over raw fetch: exact statuses, headers and bodies. */
export class RawMcp {
  sessionId?: string;
  private nextId = 1;

  constructor(
    readonly mcpUrl: string,
    readonly token: string,
  ) {}

  headers(extra: Record<string, string> = {}): Record<string, string> {
    return {
      Authorization: `Bearer ${this.token}`,
      'Content-Type': 'application/json',
      Accept: 'application/json, text/event-stream',
      ...(this.sessionId ? { 'Mcp-Session-Id': this.sessionId, 'MCP-Protocol-Version': protocolVersion } : {}),
      ...extra,
    };
  }

  post(body: unknown, extraHeaders: Record<string, string> = {}, signal?: AbortSignal): Promise<Response> {
    return fetch(this.mcpUrl, {
      method: 'POST',
      headers: this.headers(extraHeaders),
      body: typeof body === 'string' ? body : JSON.stringify(body),
      signal,
    });
  }

  async initialize(version = protocolVersion, capabilities: Record<string, unknown> = {}): Promise<any> {
    const response = await this.post({
      jsonrpc: '2.0',
      id: 0,
      method: 'initialize',
      params: { protocolVersion: version, capabilities, clientInfo: { name: 'raw-test', version: '1.0.0' } },
    });
    if (response.status !== 200) throw new Error(`initialize: ${response.status} ${await response.text()}`);
    this.sessionId = response.headers.get('mcp-session-id') ?? undefined;
    const body = await response.json();
    const initialized = await this.post({ jsonrpc: '2.0', method: 'notifications/initialized' });
    if (initialized.status !== 202) throw new Error(`initialized: ${initialized.status}`);
    return body.result;
  }

  /** Sends a request and returns its JSON-RPC reply, read from JSON or from the end of an SSE stream. */
  async request(method: string, params?: Record<string, unknown>, extraHeaders?: Record<string, string>): Promise<RpcReply> {
    const id = this.nextId++;
    const response = await this.post({ jsonrpc: '2.0', id, method, ...(params ? { params } : {}) }, extraHeaders);
    return { status: response.status, headers: response.headers, body: await readRpcReply(response, id) };
  }

  /** The result of a request that must succeed. */
  async call(method: string, params?: Record<string, unknown>): Promise<any> {
    const reply = await this.request(method, params);
    if (reply.body?.error) throw new Error(`${method}: ${JSON.stringify(reply.body.error)}`);
    return reply.body.result;
  }

  /** The JSON-RPC error of a request that must fail. */
  async error(method: string, params?: Record<string, unknown>): Promise<{ code: number; message: string }> {
    const reply = await this.request(method, params);
    if (!reply.body?.error) throw new Error(`${method} unexpectedly succeeded: ${JSON.stringify(reply.body)}`);
    return reply.body.error;
  }

  async openGetStream(lastEventId?: string): Promise<SseReader> {
    const headers = this.headers({ Accept: 'text/event-stream', ...(lastEventId ? { 'Last-Event-ID': lastEventId } : {}) });
    delete headers['Content-Type'];
    const response = await fetch(this.mcpUrl, { method: 'GET', headers });
    if (response.status !== 200) throw new Error(`GET stream: ${response.status} ${await response.text()}`);
    return new SseReader(response);
  }

  async startDelayTask(seconds: number, extra: Record<string, unknown> = {}): Promise<any> {
    const result = await this.call('tools/call', { name: 'delay', arguments: { seconds }, task: {}, ...extra });
    return result.task;
  }
}

/** A request's JSON-RPC reply: the JSON body, or the response at the end of its SSE stream (an error when the stream ends without one). */
export async function readRpcReply(response: Response, id: number, timeoutMs = 60_000): Promise<any> {
  const type = response.headers.get('content-type') ?? '';
  if (type.startsWith('text/event-stream')) {
    const reader = new SseReader(response);
    for (;;) {
      const message = await reader.nextMessage(timeoutMs);
      if (!message) throw new Error('SSE stream ended without a response');
      if (message.id === id && ('result' in message || 'error' in message)) {
        await reader.close();
        return message;
      }
    }
  }
  const text = await response.text();
  return text ? JSON.parse(text) : null;
}

/** The official SDK client, connected with a bearer token. */
export async function connectSdkClient(
  mcpUrl: string,
  token: string,
  options: { capabilities?: Record<string, unknown>; name?: string } = {},
): Promise<{ client: Client; transport: StreamableHTTPClientTransport; close(): Promise<void> }> {
  const client = new Client(
    { name: options.name ?? 'sdk-test-client', version: '1.2.3' },
    { capabilities: options.capabilities ?? {} },
  );
  client.onerror = () => {};
  const transport = new StreamableHTTPClientTransport(new URL(mcpUrl), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  });
  await client.connect(transport);
  return {
    client,
    transport,
    close: async () => {
      await transport.terminateSession().catch(() => {});
      await client.close();
    },
  };
}

/**
 * The official SDK 2.x client, which has no task runtime: the stand-in for the clients that only make
 * plain calls (Claude Code, Cursor, Codex). Its bearer token goes through the transport's authProvider.
 */
export async function connectSdk2Client(
  mcpUrl: string,
  token: string,
  options: {
    name?: string;
    elicit?: (params: any) => Promise<Record<string, unknown>>;
    /** The capabilities it declares, instead of form-mode elicitation when it has `elicit` and none otherwise. */
    capabilities?: Record<string, unknown>;
    /** Let the client choose its era (server/discover first, 2026-07-28 when the server speaks it) instead of the SDK's default, 2025-11-25. */
    chooseEra?: boolean;
  } = {},
): Promise<{ client: Sdk2Client; close(): Promise<void> }> {
  const client = new Sdk2Client(
    { name: options.name ?? 'sdk2-client', version: '2.4.0' },
    {
      capabilities: options.capabilities ?? (options.elicit ? { elicitation: { form: {} } } : {}),
      ...(options.chooseEra ? { versionNegotiation: { mode: 'auto' as const }, inputRequired: { maxRounds: 100 } } : {}),
    },
  );
  client.onerror = () => {};
  if (options.elicit) client.setRequestHandler('elicitation/create', (request: any) => options.elicit!(request.params) as any);
  const transport = new Sdk2Transport(new URL(mcpUrl), { authProvider: { token: async () => token } });
  await client.connect(transport);
  return {
    client,
    close: async () => {
      await transport.terminateSession().catch(() => {});
      await client.close();
    },
  };
}

/**
 * Sends a request, reads its priming event, and drops the stream, as a client that loses its
 * connection; returns the priming event's id, to resume from.
 */
export async function callAndDrop(mcp: RawMcp, id: string | number, method: string, params: Record<string, unknown>): Promise<string> {
  const controller = new AbortController();
  const response = await mcp.post({ jsonrpc: '2.0', id, method, params }, {}, controller.signal);
  const priming = await new SseReader(response).next();
  controller.abort();
  if (priming?.data !== '' || !priming.id) throw new Error(`expected a priming event with an id, got ${JSON.stringify(priming)}`);
  return priming.id;
}

/** An initialize request with this Authorization header (none when empty): its status and headers, the body dropped. */
export async function initializeWith(mcpUrl: string, authorization: string): Promise<{ status: number; headers: Headers }> {
  const response = await fetch(mcpUrl, {
    method: 'POST',
    headers: { ...(authorization ? { Authorization: authorization } : {}), 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion, capabilities: {}, clientInfo: { name: 'status-probe', version: '1' } } }),
  });
  await response.body?.cancel();
  return { status: response.status, headers: response.headers };
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A JSON reply; a stream (what a refusal must not be) is dropped unread, so that a test fails at once. */
export async function replyOf(response: Response): Promise<RpcReply> {
  if (!response.headers.get('content-type')?.startsWith('application/json')) {
    await response.body?.cancel();
    return { status: response.status, headers: response.headers, body: undefined };
  }
  return { status: response.status, headers: response.headers, body: await response.json() };
}

/** Tries until `attempt` gives something other than 429, or the deadline passes; returns the last response. */
export async function untilNotRefused(attempt: () => Promise<Response>, timeoutMs = 15_000): Promise<Response> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const response = await attempt();
    if (response.status !== 429 || Date.now() > deadline) return response;
    await response.body?.cancel();
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
