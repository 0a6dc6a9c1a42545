import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  LoggingMessageNotificationSchema,
  McpError,
  ToolListChangedNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';
import packageJson from '@/package.json';
import { logLevels, type ElicitRequest, type LogLevel, type ToolContext } from '@/lib/tools/define';
import type { UpstreamTransport } from './config';
import { minimalEnvironment } from './environment';

/**
 * One connection to an upstream server (a stdio child, or a Streamable HTTP session) and the calls in
 * flight on it. What upstream sends during a call (log messages, questions for the person, requests for
 * the client's model) is relayed onto that call's task; nothing here guesses across connections.
 */

/** A call in flight: whom to tell what upstream sends while it runs. */
export interface CallInFlight {
  ctx: ToolContext;
  questions: number;
  /** The upstream's task, for a call that runs as one there. */
  upstreamTaskId?: string;
}

/** The key of the `_meta` that names the task a request belongs to (MCP 2025-11-25). */
export const relatedTaskKey = 'io.modelcontextprotocol/related-task';
/** The longest an upstream takes to start and answer initialize. */
export const connectTimeoutMs = 30_000;

/** Upstream asked for something we cannot give: it gets this error. */
const cannotRelay = (message: string) => new McpError(-32603, message);

export interface ConnectionOptions {
  serverName: string;
  transport: UpstreamTransport;
  /** Headers on top of the entry's own (a person's credential). */
  extraHeaders?: Record<string, string>;
  /** An upstream Streamable HTTP session to take up again (one that a restart left), instead of a new one. */
  sessionId?: string;
  /** Where a stdio child's stderr goes. */
  stderr?: (chunk: Buffer) => void;
  onToolsChanged?: () => void;
  onClose?: () => void;
}

export class UpstreamConnection {
  readonly client: Client;
  readonly calls = new Set<CallInFlight>();
  private readonly transport: StdioClientTransport | StreamableHTTPClientTransport;
  private closed = false;

  constructor(private readonly options: ConnectionOptions) {
    this.client = new Client(
      { name: 'mcp-task-server', version: packageJson.version },
      // Questions for the person and requests for a model are relayed to whoever the call runs for.
      { capabilities: { elicitation: { form: {} }, sampling: {} } },
    );
    this.client.setRequestHandler(ElicitRequestSchema, (request) => this.relayQuestion(request.params));
    this.client.setRequestHandler(CreateMessageRequestSchema, (request) => this.relaySampling(request.params));
    this.client.setNotificationHandler(LoggingMessageNotificationSchema, (notification) => this.relayLog(notification.params));
    this.client.setNotificationHandler(ToolListChangedNotificationSchema, () => options.onToolsChanged?.());
    // What the SDK reports besides failed requests (a progress report that came after its response) changes nothing here.
    this.client.onerror = () => {};
    this.transport = this.createTransport();
  }

  private createTransport(): StdioClientTransport | StreamableHTTPClientTransport {
    const target = this.options.transport;
    if (target.kind === 'http') {
      return new StreamableHTTPClientTransport(new URL(target.url), {
        requestInit: { headers: { ...target.headers, ...this.options.extraHeaders } },
        ...(this.options.sessionId ? { sessionId: this.options.sessionId } : {}),
      });
    }
    const transport = new StdioClientTransport({
      command: target.command,
      args: target.args,
      // Only what a program needs to run, and the entry's own variables: never this server's secrets.
      env: { ...minimalEnvironment(), ...target.env },
      ...(target.cwd ? { cwd: target.cwd } : {}),
      stderr: 'pipe',
    });
    const stderr = this.options.stderr;
    if (stderr) transport.stderr?.on('data', stderr);
    return transport;
  }

  async open(): Promise<void> {
    await withTimeout(this.client.connect(this.transport), connectTimeoutMs, 'it did not answer initialize');
    // Set once connected: a connection that never opened is reported by open's rejection instead.
    this.client.onclose = () => {
      if (this.closed) return;
      this.closed = true;
      this.options.onClose?.();
    };
  }

  /** The upstream session (Streamable HTTP), to note with a task that runs there. */
  sessionId(): string | null {
    return this.transport instanceof StreamableHTTPClientTransport ? (this.transport.sessionId ?? null) : null;
  }

  /** Whether upstream said it runs tools/call as tasks. */
  takesTasks(): boolean {
    return Boolean(this.client.getServerCapabilities()?.tasks?.requests?.tools?.call);
  }

  isClosed(): boolean {
    return this.closed;
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.client.close().catch(() => {});
  }

  /**
   * A message upstream sends during a call belongs to that call. A request that names its upstream task
   * goes to the call of that task; otherwise nothing says which call it belongs to, so it is relayed
   * only while exactly one call is in flight on this connection. Another person must never be shown a
   * question that was not theirs.
   */
  private callOf(params: Record<string, unknown>): CallInFlight | undefined {
    const related = (params._meta as Record<string, { taskId?: unknown }> | undefined)?.[relatedTaskKey]?.taskId;
    if (typeof related === 'string') return [...this.calls].find((call) => call.upstreamTaskId === related);
    return this.calls.size === 1 ? [...this.calls][0] : undefined;
  }

  private async relayQuestion(params: Record<string, unknown>): Promise<Record<string, unknown>> {
    const call = this.callOf(params);
    if (!call) throw cannotRelay(this.unattributed('elicitation/create'));
    if (params.mode === 'url') throw cannotRelay('URL-mode elicitation is not relayed; ask with a form');
    call.questions += 1;
    const { message, requestedSchema } = params as unknown as ElicitRequest;
    const answer = await call.ctx.elicit({ message, requestedSchema }, { key: `upstream:elicitation:${call.questions}` });
    return { action: answer.action, ...(answer.content ? { content: answer.content } : {}) };
  }

  private async relaySampling(params: Record<string, unknown>): Promise<Record<string, unknown>> {
    const call = this.callOf(params);
    if (!call) throw cannotRelay(this.unattributed('sampling/createMessage'));
    call.questions += 1;
    // The upstream's own task id stays between it and us.
    const { _meta: _upstreamMeta, ...request } = params;
    return call.ctx.createMessage(request, { key: `upstream:sampling:${call.questions}` });
  }

  private relayLog(params: { level: string; logger?: string; data?: unknown }): void {
    const call = this.callOf(params as Record<string, unknown>);
    const level = (logLevels as readonly string[]).includes(params.level) ? (params.level as LogLevel) : 'info';
    call?.ctx.log(level, params.data, params.logger ?? this.options.serverName);
  }

  private unattributed(method: string): string {
    return this.calls.size === 0
      ? `${method} came with no call in flight`
      : `${method} came while ${this.calls.size} calls were in flight on one connection, and nothing says which it belongs to; give this server "maxConcurrent": 1 to have its questions relayed`;
  }
}

export function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} within ${ms / 1000} s`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
