import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import {
  CallToolResultSchema,
  CreateMessageRequestSchema,
  CreateTaskResultSchema,
  ElicitRequestSchema,
  LoggingMessageNotificationSchema,
  McpError,
  ToolListChangedNotificationSchema,
  type Tool,
} from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import packageJson from '@/package.json';
import type { ToolSource } from '@/lib/tools/catalogue';
import { logLevels, personAnsweringTtlMs, textResult, type CallToolResult, type ElicitRequest, type LogLevel, type TaskSupport, type ToolContext, type ToolDefinition } from '@/lib/tools/define';
import { userMayUse, type UpstreamConfig } from './config';
import { minimalEnvironment } from './environment';
import { StderrLog } from './stderr';
import { Slots } from './slots';

/**
 * One MCP server of the servers file, as this instance reaches it: one connection (a stdio child, or a
 * Streamable HTTP session) started at start and started again, with backoff, whenever it ends. Its tools
 * are a source of the catalogue: each becomes `<prefix>__<tool>`, whose `run` calls upstream and relays
 * what upstream sends during the call onto the task's context (progress, log messages, questions for the
 * person, requests for the client's model, cancellation).
 */
export type UpstreamState = 'starting' | 'up' | 'down';

export interface UpstreamStatus {
  name: string;
  transport: 'stdio' | 'http';
  state: UpstreamState;
  /** Why it is down (or why it last went down). */
  lastError: string | null;
  /** When the next attempt to start it is made, while it is down. */
  nextRetryAt: number | null;
  tools: string[];
  callsInFlight: number;
}

/** The separator between a server's prefix and its tool's own name. */
export const prefixSeparator = '__';
/** MCP 2025-11-25: a tool name is 1 to 128 characters of A-Z, a-z, 0-9, `_`, `-` and `.`. */
const toolNamePattern = /^[A-Za-z0-9_.-]{1,128}$/;
/** The longest an upstream takes to start and answer initialize and tools/list. */
const connectTimeoutMs = 30_000;
const retryBaseMs = 1_000;
const retryMaxMs = 60_000;
/** A result larger than this (as JSON) is refused: the task keeps its result in a row. */
export const maxResultBytes = 4 * 1024 * 1024;

/** Upstream answered the call's request for something we cannot give: it gets this error. */
const cannotRelay = (message: string) => new McpError(-32603, message);

/** A call in flight: whom to tell what upstream sends while it runs. */
interface CallInFlight {
  ctx: ToolContext;
  questions: number;
  /** The upstream's task, for a call that runs as one there. */
  upstreamTaskId?: string;
}

/** The key of the `_meta` that names the task a request belongs to (MCP 2025-11-25). */
const relatedTaskKey = 'io.modelcontextprotocol/related-task';
/** How often an upstream task is polled, whatever interval it suggests. */
const pollBounds = { min: 250, max: 5_000 };
const terminalStatuses = new Set(['completed', 'failed', 'cancelled']);

export class UpstreamServer implements ToolSource {
  private state: UpstreamState = 'starting';
  private lastError: string | null = null;
  private nextRetryAt: number | null = null;
  private failures = 0;
  private stopped = false;
  private retryTimer: NodeJS.Timeout | undefined;
  private client: Client | undefined;
  private listed: ToolDefinition[] = [];
  private readonly calls = new Set<CallInFlight>();
  private readonly slots: Slots;
  private readonly stderr: StderrLog;
  private firstAttempt: Promise<void> | undefined;
  readonly allows: ToolSource['allows'];

  constructor(
    readonly config: UpstreamConfig,
    /** Called whenever the tools it offers change. */
    private readonly onToolsChanged: () => void,
  ) {
    this.slots = new Slots(config.maxConcurrent);
    this.stderr = new StderrLog(config.name);
    this.allows = config.users ? (email) => userMayUse(config, email) : undefined;
  }

  tools(): readonly ToolDefinition[] {
    return this.listed;
  }

  status(): UpstreamStatus {
    return {
      name: this.config.name,
      transport: this.config.transport.kind,
      state: this.state,
      lastError: this.lastError,
      nextRetryAt: this.nextRetryAt,
      tools: this.listed.map((tool) => tool.name),
      callsInFlight: this.calls.size,
    };
  }

  /** Starts it; resolves once the first attempt has ended, up or down (a server that is down is tried again later). */
  start(): Promise<void> {
    this.firstAttempt ??= this.connect();
    return this.firstAttempt;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.retryTimer);
    const client = this.client;
    this.client = undefined;
    await client?.close().catch(() => {});
  }

  private async connect(): Promise<void> {
    if (this.stopped) return;
    this.state = 'starting';
    this.nextRetryAt = null;
    const client = new Client(
      { name: 'mcp-task-server', version: packageJson.version },
      // Questions for the person and requests for a model are relayed to whoever the call runs for.
      { capabilities: { elicitation: { form: {} }, sampling: {} } },
    );
    client.setRequestHandler(ElicitRequestSchema, (request) => this.relayQuestion(request.params));
    client.setRequestHandler(CreateMessageRequestSchema, (request) => this.relaySampling(request.params));
    client.setNotificationHandler(LoggingMessageNotificationSchema, (notification) => this.relayLog(notification.params));
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => void this.refreshTools(client).catch(() => {}));
    // What the SDK reports besides failed requests (a progress report that came after its response) changes nothing here.
    client.onerror = () => {};
    const transport = this.transport();
    try {
      await withTimeout(client.connect(transport), connectTimeoutMs, 'it did not answer initialize');
      if (this.stopped) return void (await client.close());
      client.onclose = () => this.connectionEnded(client, 'the connection closed');
      this.client = client;
      await withTimeout(this.refreshTools(client), connectTimeoutMs, 'it did not answer tools/list');
      this.state = 'up';
      this.lastError = null;
      this.failures = 0;
    } catch (error) {
      await client.close().catch(() => {});
      this.connectionEnded(client, describeError(error));
    }
  }

  private transport(): Transport {
    const target = this.config.transport;
    if (target.kind === 'http') {
      return new StreamableHTTPClientTransport(new URL(target.url), { requestInit: { headers: target.headers } });
    }
    const transport = new StdioClientTransport({
      command: target.command,
      args: target.args,
      // Only what a program needs to run, and the entry's own variables: never this server's secrets.
      env: { ...minimalEnvironment(), ...target.env },
      ...(target.cwd ? { cwd: target.cwd } : {}),
      stderr: 'pipe',
    });
    transport.stderr?.on('data', (chunk: Buffer) => this.stderr.write(chunk));
    return transport;
  }

  /** The connection ended (or never began): calls in flight fail on their own; it is started again after a backoff. */
  private connectionEnded(client: Client, reason: string): void {
    if (this.client && this.client !== client) return;
    this.client = undefined;
    if (this.stopped) return;
    this.state = 'down';
    this.lastError = reason;
    const delay = Math.min(retryMaxMs, retryBaseMs * 2 ** this.failures);
    this.failures += 1;
    this.nextRetryAt = Date.now() + delay;
    console.error(`Upstream server ${this.config.name} is down (${reason}); trying again in ${Math.round(delay / 1000)} s`);
    clearTimeout(this.retryTimer);
    this.retryTimer = setTimeout(() => void this.connect(), delay);
    this.retryTimer.unref();
  }

  private async refreshTools(client: Client): Promise<void> {
    const found: Tool[] = [];
    let cursor: string | undefined;
    do {
      const page = await client.listTools(cursor ? { cursor } : undefined);
      found.push(...page.tools);
      cursor = page.nextCursor;
    } while (cursor && found.length < 10_000);
    if (client !== this.client) return;
    const before = JSON.stringify(this.listed.map((tool) => [tool.name, tool.described]));
    this.listed = found.flatMap((tool) => this.define(tool));
    if (JSON.stringify(this.listed.map((tool) => [tool.name, tool.described])) !== before) this.onToolsChanged();
  }

  /** The catalogue's definition of an upstream tool, or none for a tool whose name cannot be offered. */
  private define(tool: Tool): ToolDefinition[] {
    const name = `${this.config.toolPrefix}${prefixSeparator}${tool.name}`;
    if (!toolNamePattern.test(name)) {
      console.error(`Upstream server ${this.config.name}: its tool ${JSON.stringify(tool.name)} is left out: ${JSON.stringify(name)} is not a valid MCP tool name`);
      return [];
    }
    // Every call runs as a task of ours (durable, in the dashboard) unless the operator marked the tool instant;
    // one that upstream runs only as a task is called as one there, and works from clients without tasks.
    const upstreamRequiresTask = tool.execution?.taskSupport === 'required';
    // A call that waits for a person's approval needs a task to wait in, instant or not.
    const instant = this.config.instant.includes(tool.name) && !upstreamRequiresTask && !this.needsApproval(tool.name);
    const taskSupport: TaskSupport = instant ? 'forbidden' : 'optional';
    return [
      {
        name,
        ...(tool.title ? { title: tool.title } : {}),
        description: tool.description ?? '',
        inputSchema: z.looseObject({}),
        described: {
          inputSchema: tool.inputSchema as Record<string, unknown>,
          ...(tool.outputSchema ? { outputSchema: tool.outputSchema as Record<string, unknown> } : {}),
          ...(tool.icons ? { icons: tool.icons } : {}),
        },
        ...(tool.annotations ? { annotations: tool.annotations } : {}),
        taskSupport,
        resumable: this.config.resumable.includes(tool.name),
        maxRunMs: this.config.timeoutMs,
        // A person approving needs hours, as one answering a question does.
        ...(this.needsApproval(tool.name) ? { minTtlMs: personAnsweringTtlMs } : {}),
        run: (args, ctx) => this.call(tool.name, args, ctx, upstreamRequiresTask),
      },
    ];
  }

  /** Calls the upstream tool for one task (or plain call), relaying what upstream sends while it runs. */
  private async call(toolName: string, args: Record<string, unknown>, ctx: ToolContext, asTask: boolean): Promise<CallToolResult> {
    if (this.needsApproval(toolName)) {
      const answer = await ctx.approve({ server: this.config.name, tool: toolName, arguments: args }, { key: 'upstream:approval' });
      if (!answer.approved) return textResult(`Denied by ${answer.answeredByLabel ?? 'a person'} in the dashboard: ${this.config.name} did not run ${toolName}.`, true);
    }
    if (!this.slots.free()) ctx.status(`Waiting for a free slot on ${this.config.name}`);
    const release = await this.slots.take(ctx.signal);
    const inFlight: CallInFlight = { ctx, questions: 0 };
    try {
      const client = this.client;
      if (!client) throw new Error(`the server ${this.config.name} is not running (${this.lastError ?? 'starting'}); try again later`);
      ctx.status(`Calling ${toolName} on ${this.config.name}`);
      this.calls.add(inFlight);
      const result = asTask
        ? await this.callAsTask(client, toolName, args, inFlight)
        : await client.callTool({ name: toolName, arguments: args }, CallToolResultSchema, {
            signal: ctx.signal,
            // The whole call, progress or not: the SDK resets neither on progress unless asked.
            timeout: this.config.timeoutMs,
            onprogress: (progress) => ctx.progress(progress.progress, progress.total, progress.message),
          });
      const size = Buffer.byteLength(JSON.stringify(result));
      if (size > maxResultBytes) throw new Error(`its result is ${size} bytes, more than the ${maxResultBytes} a task's result may hold`);
      return withoutUpstreamTask(result as unknown as CallToolResult);
    } catch (error) {
      if (ctx.signal.aborted) throw error;
      throw new Error(`${this.config.name} did not complete the call: ${describeError(error)}`);
    } finally {
      this.calls.delete(inFlight);
      release();
    }
  }

  private needsApproval(toolName: string): boolean {
    return this.config.approve.all || this.config.approve.tools.includes(toolName);
  }

  /**
   * Calls a tool upstream as a task there (2025-11-25 task augmentation) and follows it to its end:
   * polled with tasks/get, its status message shown on ours, tasks/result read once it ends, or at once
   * when it waits for input (the questions come on that request, naming the upstream task). Our task's
   * cancellation or expiry cancels it upstream.
   */
  private async callAsTask(client: Client, toolName: string, args: Record<string, unknown>, call: CallInFlight): Promise<Record<string, unknown>> {
    const { ctx } = call;
    const deadline = AbortSignal.any([ctx.signal, AbortSignal.timeout(this.config.timeoutMs)]);
    const created = await client.request({ method: 'tools/call', params: { name: toolName, arguments: args, task: { ttl: this.config.timeoutMs } } }, CreateTaskResultSchema, {
      signal: deadline,
      timeout: this.config.timeoutMs,
    });
    const taskId = created.task.taskId;
    call.upstreamTaskId = taskId;
    const cancelUpstream = () => void client.experimental.tasks.cancelTask(taskId).catch(() => {});
    deadline.addEventListener('abort', cancelUpstream, { once: true });
    try {
      let task = created.task;
      let lastMessage: string | undefined;
      while (!terminalStatuses.has(task.status) && task.status !== 'input_required') {
        if (task.statusMessage && task.statusMessage !== lastMessage) ctx.status((lastMessage = task.statusMessage));
        await sleep(Math.min(pollBounds.max, Math.max(pollBounds.min, task.pollInterval ?? 1_000)), deadline);
        task = await client.experimental.tasks.getTask(taskId, { signal: deadline, timeout: this.config.timeoutMs });
      }
      if (task.status === 'cancelled') throw new Error(`its task ${taskId} was cancelled upstream`);
      // Blocks until the upstream task ends; its questions arrive meanwhile.
      return await client.experimental.tasks.getTaskResult(taskId, CallToolResultSchema, { signal: deadline, timeout: this.config.timeoutMs });
    } finally {
      deadline.removeEventListener('abort', cancelUpstream);
    }
  }

  /**
   * A message upstream sends during a call belongs to that call; on a connection shared by several calls
   * nothing says which, so it is relayed only while exactly one call is in flight. Another person must
   * never be shown a question that was not theirs.
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
    if (call) call.ctx.log(level, params.data, params.logger ?? this.config.name);
  }

  private unattributed(method: string): string {
    return this.calls.size === 0
      ? `${method} came with no call in flight`
      : `${method} came while ${this.calls.size} calls were in flight on one connection, and nothing says which it belongs to; give this server "maxConcurrent": 1 to have its questions relayed`;
  }
}

/** A result as our client gets it: the upstream's task is not the client's, and naming it would mislead. */
function withoutUpstreamTask(result: CallToolResult): CallToolResult {
  if (!result._meta || !(relatedTaskKey in result._meta)) return result;
  const { [relatedTaskKey]: _upstreamTask, ...meta } = result._meta;
  const { _meta: _all, ...rest } = result;
  return Object.keys(meta).length > 0 ? { ...rest, _meta: meta } : rest;
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', stop);
      resolve();
    }, ms);
    const stop = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    signal.throwIfAborted();
    signal.addEventListener('abort', stop, { once: true });
  });
}

function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} within ${ms / 1000} s`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

function describeError(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return message.replace(/\s+/g, ' ').trim().slice(0, 500);
}
