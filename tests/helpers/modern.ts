import { SseReader } from './mcp';

export const modernVersion = '2026-07-28';
export const tasksExtension = 'io.modelcontextprotocol/tasks';

/** What one modern request got: the HTTP status and headers, the messages before the response (SSE), and the response. */
export interface ModernReply {
  status: number;
  headers: Headers;
  contentType: string;
  notifications: Array<Record<string, any>>;
  body: Record<string, any>;
}

interface RequestOptions {
  /** The request's declared capabilities, instead of the client's. */
  capabilities?: Record<string, unknown>;
  /** More `_meta` (logLevel, progressToken…). */
  meta?: Record<string, unknown>;
  /** Headers to add or override (null removes one). */
  headers?: Record<string, string | null>;
  signal?: AbortSignal;
}

const namedBy: Record<string, string> = { 'tools/call': 'name', 'tasks/get': 'taskId', 'tasks/update': 'taskId', 'tasks/cancel': 'taskId' };

/**
 * A 2026-07-28 client in raw HTTP: no session, every request a POST carrying its version, client and
 * capabilities in `_meta`, mirrored in MCP-Protocol-Version, Mcp-Method and Mcp-Name, as the revision says.
 */
export class ModernMcp {
  private nextId = 1;

  constructor(
    readonly url: string,
    readonly token: string,
    readonly capabilities: Record<string, unknown> = {},
    readonly clientInfo = { name: 'modern-test-client', version: '1.0.0' },
  ) {}

  /** The request as sent: its body and headers. */
  build(method: string, params: Record<string, unknown> = {}, options: RequestOptions = {}) {
    const id = this.nextId++;
    const body = {
      jsonrpc: '2.0',
      id,
      method,
      params: {
        ...params,
        _meta: {
          'io.modelcontextprotocol/protocolVersion': modernVersion,
          'io.modelcontextprotocol/clientInfo': this.clientInfo,
          'io.modelcontextprotocol/clientCapabilities': options.capabilities ?? this.capabilities,
          ...options.meta,
        },
      },
    };
    const headers: Record<string, string> = {
      Authorization: `Bearer ${this.token}`,
      'Content-Type': 'application/json',
      Accept: 'application/json, text/event-stream',
      'MCP-Protocol-Version': modernVersion,
      'Mcp-Method': method,
    };
    const named = namedBy[method] ? params[namedBy[method]] : undefined;
    if (typeof named === 'string') headers['Mcp-Name'] = named;
    for (const [name, value] of Object.entries(options.headers ?? {})) {
      if (value === null) delete headers[name];
      else headers[name] = value;
    }
    return { id, body, headers };
  }

  post(body: unknown, headers: Record<string, string>, signal?: AbortSignal): Promise<Response> {
    return fetch(this.url, { method: 'POST', headers, body: typeof body === 'string' ? body : JSON.stringify(body), signal });
  }

  /** Sends one request and reads its whole answer, JSON or SSE. */
  async request(method: string, params: Record<string, unknown> = {}, options: RequestOptions = {}): Promise<ModernReply> {
    const { body, headers } = this.build(method, params, options);
    return readReply(await this.post(body, headers, options.signal));
  }

  /**
   * A host's raw request path for the official tasks requester (@modelcontextprotocol/ext-tasks): it
   * hands over a framed request without jsonrpc and id, and takes the result or the error back.
   */
  async rawDispatch(request: { method: string; params?: Record<string, unknown> }): Promise<{ kind: 'result'; result: any } | { kind: 'error'; error: any }> {
    const named = namedBy[request.method] ? request.params?.[namedBy[request.method]] : undefined;
    const headers: Record<string, string> = {
      Authorization: `Bearer ${this.token}`,
      'Content-Type': 'application/json',
      Accept: 'application/json, text/event-stream',
      'MCP-Protocol-Version': modernVersion,
      'Mcp-Method': request.method,
      ...(typeof named === 'string' ? { 'Mcp-Name': named } : {}),
    };
    const { body } = await readReply(await this.post({ jsonrpc: '2.0', id: this.nextId++, ...request }, headers));
    return body.error ? { kind: 'error', error: body.error } : { kind: 'result', result: body.result };
  }

  /** The result of a request that must succeed; throws with the error otherwise. */
  async call(method: string, params: Record<string, unknown> = {}, options: RequestOptions = {}): Promise<Record<string, any>> {
    const reply = await this.request(method, params, options);
    if (!reply.body.result) throw new Error(`${method} failed (HTTP ${reply.status}): ${JSON.stringify(reply.body)}`);
    return reply.body.result;
  }
}

export async function readReply(response: Response): Promise<ModernReply> {
  const contentType = response.headers.get('content-type') ?? '';
  if (!contentType.startsWith('text/event-stream')) {
    const text = await response.text();
    return { status: response.status, headers: response.headers, contentType, notifications: [], body: text ? JSON.parse(text) : {} };
  }
  const reader = new SseReader(response);
  const notifications: Array<Record<string, any>> = [];
  for (;;) {
    const message = await reader.nextMessage(30_000);
    if (!message) throw new Error(`the stream ended without a response; it carried ${JSON.stringify(notifications)}`);
    if ('id' in message && ('result' in message || 'error' in message)) return { status: response.status, headers: response.headers, contentType, notifications, body: message };
    notifications.push(message);
  }
}
