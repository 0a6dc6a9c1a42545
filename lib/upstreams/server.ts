import { CallToolResultSchema, CreateTaskResultSchema, type Tool } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { getEnv } from '@/lib/env';
import type { ToolSource } from '@/lib/tools/catalogue';
import { isHandedOver, personAnsweringTtlMs, textResult, type CallToolResult, type TaskSupport, type ToolContext, type ToolDefinition } from '@/lib/tools/define';
import { userMayUse, type PerUserHeader, type UpstreamConfig } from './config';
import { connectTimeoutMs, relatedTaskKey, UpstreamConnection, withTimeout, type CallInFlight } from './connection';
import { readUpstreamSecret } from './credentials';
import { Slots } from './slots';
import { StderrLog } from './stderr';

/**
 * One MCP server of the servers file, as this instance reaches it: one connection (a stdio child, or a
 * Streamable HTTP session) started at start and started again, with backoff, whenever it ends; and for
 * a server whose entry has `perUserHeader`, one more per person, carrying that person's own secret. Its
 * tools are a source of the catalogue: each becomes `<prefix>__<tool>`, whose `run` calls upstream (as a
 * task there when upstream runs tools as tasks) and relays what upstream sends during the call onto the
 * task's context.
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
  /** The header each person gives their own secret for, when the entry has `perUserHeader`. */
  perUserHeader: string | null;
}

/** The separator between a server's prefix and its tool's own name. */
export const prefixSeparator = '__';
/** MCP 2025-11-25: a tool name is 1 to 128 characters of A-Z, a-z, 0-9, `_`, `-` and `.`. */
const toolNamePattern = /^[A-Za-z0-9_.-]{1,128}$/;
const retryBaseMs = 1_000;
const retryMaxMs = 60_000;
/** A person's own connection is closed after this long without a call. */
const personalIdleMs = 10 * 60_000;
/** A result larger than this (as JSON) is refused: the task keeps its result in a row. */
export const maxResultBytes = 4 * 1024 * 1024;
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
  private shared: UpstreamConnection | undefined;
  private readonly personal = new Map<string, { connection: UpstreamConnection; secret: string; lastUsed: number }>();
  private listed: ToolDefinition[] = [];
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
    let callsInFlight = this.shared?.calls.size ?? 0;
    for (const { connection } of this.personal.values()) callsInFlight += connection.calls.size;
    return {
      name: this.config.name,
      transport: this.config.transport.kind,
      state: this.state,
      lastError: this.lastError,
      nextRetryAt: this.nextRetryAt,
      tools: this.listed.map((tool) => tool.name),
      callsInFlight,
      perUserHeader: this.config.perUserHeader?.name ?? null,
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
    const connections = [this.shared, ...[...this.personal.values()].map((entry) => entry.connection)];
    this.shared = undefined;
    this.personal.clear();
    await Promise.all(connections.map((connection) => connection?.close()));
  }

  private async connect(): Promise<void> {
    if (this.stopped) return;
    this.state = 'starting';
    this.nextRetryAt = null;
    const connection: UpstreamConnection = new UpstreamConnection({
      serverName: this.config.name,
      transport: this.config.transport,
      stderr: (chunk) => this.stderr.write(chunk),
      onToolsChanged: () => void this.refreshTools(connection).catch(() => {}),
      onClose: () => this.connectionEnded(connection, 'the connection closed'),
    });
    try {
      await connection.open();
      if (this.stopped) return void (await connection.close());
      this.shared = connection;
      await withTimeout(this.refreshTools(connection), connectTimeoutMs, 'it did not answer tools/list');
      this.state = 'up';
      this.lastError = null;
      this.failures = 0;
    } catch (error) {
      await connection.close();
      this.connectionEnded(connection, describeError(error));
    }
  }

  /** The connection ended (or never began): its calls in flight fail on their own; it is started again after a backoff. */
  private connectionEnded(connection: UpstreamConnection, reason: string): void {
    if (this.shared && this.shared !== connection) return;
    this.shared = undefined;
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

  private async refreshTools(connection: UpstreamConnection): Promise<void> {
    const found: Tool[] = [];
    let cursor: string | undefined;
    do {
      const page = await connection.client.listTools(cursor ? { cursor } : undefined);
      found.push(...page.tools);
      cursor = page.nextCursor;
    } while (cursor && found.length < 10_000);
    if (connection !== this.shared) return;
    const before = listingOf(this.listed);
    this.listed = found.flatMap((tool) => this.define(tool));
    if (listingOf(this.listed) !== before) this.onToolsChanged();
  }

  /** The catalogue's definition of an upstream tool, or none for a tool whose name cannot be offered. */
  private define(tool: Tool): ToolDefinition[] {
    const name = `${this.config.toolPrefix}${prefixSeparator}${tool.name}`;
    if (!toolNamePattern.test(name)) {
      console.error(`Upstream server ${this.config.name}: its tool ${JSON.stringify(tool.name)} is left out: ${JSON.stringify(name)} is not a valid MCP tool name`);
      return [];
    }
    const upstreamSupport: TaskSupport = tool.execution?.taskSupport ?? 'forbidden';
    // Every call runs as a task of ours (durable, in the dashboard) unless the operator marked the tool
    // instant; one that upstream runs only as a task is called as one there, and works from clients without tasks.
    // A call that waits for a person's approval needs a task to wait in, instant or not.
    const instant = this.config.instant.includes(tool.name) && upstreamSupport !== 'required' && !this.needsApproval(tool.name);
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
        interruptedMessage: `Interrupted by a restart; it may or may not have completed upstream on ${this.config.name}.`,
        maxRunMs: this.config.timeoutMs,
        // A person approving needs hours, as one answering a question does.
        ...(this.needsApproval(tool.name) ? { minTtlMs: personAnsweringTtlMs } : {}),
        run: (args, ctx) => this.call(tool.name, upstreamSupport, args, ctx),
      },
    ];
  }

  /** Calls the upstream tool for one task (or plain call), or follows the upstream task a restart left. */
  private async call(toolName: string, upstreamSupport: TaskSupport, args: Record<string, unknown>, ctx: ToolContext): Promise<CallToolResult> {
    if (this.needsApproval(toolName)) {
      const answer = await ctx.approve({ server: this.config.name, tool: toolName, arguments: args }, { key: 'upstream:approval' });
      if (!answer.approved) return textResult(`Denied by ${answer.answeredByLabel ?? 'a person'} in the dashboard: ${this.config.name} did not run ${toolName}.`, true);
    }
    const left = ctx.resumedFrom?.upstream;
    const canFollow = left && this.config.transport.kind === 'http';
    // A stdio server's tasks end with its child, which ended with the process that started it.
    if (left && !canFollow && !this.config.resumable.includes(toolName)) {
      throw new Error(`Interrupted by a restart; it may or may not have completed upstream on ${this.config.name}.`);
    }
    if (!this.slots.free()) ctx.status(`Waiting for a free slot on ${this.config.name}`);
    const release = await this.slots.take(ctx.signal);
    try {
      const result = canFollow ? await this.follow(left, ctx) : await this.callNow(toolName, upstreamSupport, args, ctx);
      const size = Buffer.byteLength(JSON.stringify(result));
      if (size > maxResultBytes) throw new Error(`its result is ${size} bytes, more than the ${maxResultBytes} a task's result may hold`);
      return withoutUpstreamTask(result as unknown as CallToolResult);
    } catch (error) {
      if (ctx.signal.aborted) throw error;
      throw new Error(`${this.config.name} did not complete the call: ${describeError(error)}`);
    } finally {
      release();
    }
  }

  private needsApproval(toolName: string): boolean {
    return this.config.approve.all || this.config.approve.tools.includes(toolName);
  }

  private async callNow(toolName: string, upstreamSupport: TaskSupport, args: Record<string, unknown>, ctx: ToolContext): Promise<Record<string, unknown>> {
    const connection = await this.connectionFor(ctx.userId);
    const call: CallInFlight = { ctx, questions: 0 };
    connection.calls.add(call);
    try {
      ctx.status(`Calling ${toolName} on ${this.config.name}`);
      // Run as a task upstream where it can be (and noted with ours), so that a restart follows it.
      if (upstreamSupport !== 'forbidden' && connection.takesTasks()) {
        const created = await connection.client.request(
          { method: 'tools/call', params: { name: toolName, arguments: args, task: { ttl: this.config.timeoutMs } } },
          CreateTaskResultSchema,
          { signal: ctx.signal, timeout: this.config.timeoutMs },
        );
        call.upstreamTaskId = created.task.taskId;
        await ctx.noteUpstreamTask?.(created.task.taskId, connection.sessionId());
        return await this.followTask(connection, call, created.task);
      }
      return await connection.client.callTool({ name: toolName, arguments: args }, CallToolResultSchema, {
        signal: ctx.signal,
        // The whole call, progress or not: the SDK resets it on progress only when asked to.
        timeout: this.config.timeoutMs,
        onprogress: (progress) => ctx.progress(progress.progress, progress.total, progress.message),
      });
    } finally {
      connection.calls.delete(call);
    }
  }

  /** Follows an upstream task that a restart (or a stopped instance) left, in the upstream session it belongs to. */
  private async follow(left: { taskId: string; sessionId: string | null }, ctx: ToolContext): Promise<Record<string, unknown>> {
    ctx.status(`Following its task on ${this.config.name} again after a restart`);
    const connection = new UpstreamConnection({
      serverName: this.config.name,
      transport: this.config.transport,
      extraHeaders: await this.personalHeaders(ctx.userId),
      ...(left.sessionId ? { sessionId: left.sessionId } : {}),
    });
    const call: CallInFlight = { ctx, questions: 0, upstreamTaskId: left.taskId };
    try {
      await connection.open();
      connection.calls.add(call);
      const task = await connection.client.experimental.tasks.getTask(left.taskId, { signal: ctx.signal, timeout: this.config.timeoutMs });
      return await this.followTask(connection, call, task);
    } finally {
      await connection.close();
    }
  }

  /**
   * Follows an upstream task to its end: polled with tasks/get, its status message shown on ours,
   * tasks/result read once it ends, or at once when it waits for input (its questions come on that
   * request, naming the upstream task). Our task's cancellation or expiry, or the call's time running
   * out, cancels it upstream.
   */
  private async followTask(
    connection: UpstreamConnection,
    call: CallInFlight,
    first: { taskId: string; status: string; statusMessage?: string; pollInterval?: number },
  ): Promise<Record<string, unknown>> {
    const { ctx } = call;
    const taskId = first.taskId;
    const deadline = AbortSignal.any([ctx.signal, AbortSignal.timeout(this.config.timeoutMs)]);
    const cancelUpstream = () => {
      // Handed over, the upstream task goes on: whoever resumes ours follows it.
      if (!isHandedOver(ctx.signal)) void connection.client.experimental.tasks.cancelTask(taskId).catch(() => {});
    };
    deadline.addEventListener('abort', cancelUpstream, { once: true });
    try {
      let task = first;
      let shown: string | undefined;
      while (!terminalStatuses.has(task.status) && task.status !== 'input_required') {
        if (task.statusMessage && task.statusMessage !== shown) ctx.status((shown = task.statusMessage));
        await sleep(Math.min(pollBounds.max, Math.max(pollBounds.min, task.pollInterval ?? 1_000)), deadline);
        task = await connection.client.experimental.tasks.getTask(taskId, { signal: deadline, timeout: this.config.timeoutMs });
      }
      if (task.status === 'cancelled') throw new Error(`its task ${taskId} was cancelled upstream`);
      // Blocks until the upstream task ends; its questions arrive meanwhile.
      return await connection.client.experimental.tasks.getTaskResult(taskId, CallToolResultSchema, { signal: deadline, timeout: this.config.timeoutMs });
    } finally {
      deadline.removeEventListener('abort', cancelUpstream);
    }
  }

  /** The connection a person's call goes on: the shared one, or their own for a server that takes each person's secret. */
  private async connectionFor(userId: string): Promise<UpstreamConnection> {
    const header = this.config.perUserHeader;
    if (!header) {
      if (!this.shared) throw new Error(`the server ${this.config.name} is not running (${this.lastError ?? 'starting'}); try again later`);
      return this.shared;
    }
    this.closeIdlePersonal();
    const secret = await this.secretOf(userId);
    const kept = this.personal.get(userId);
    if (kept && kept.secret === secret && !kept.connection.isClosed()) {
      kept.lastUsed = Date.now();
      return kept.connection;
    }
    this.personal.delete(userId);
    void kept?.connection.close();
    const connection = new UpstreamConnection({
      serverName: this.config.name,
      transport: this.config.transport,
      extraHeaders: headerWith(header, secret),
      onClose: () => {
        if (this.personal.get(userId)?.connection === connection) this.personal.delete(userId);
      },
    });
    try {
      await connection.open();
    } catch (error) {
      await connection.close();
      throw new Error(`it could not be reached with your ${header.name} (${describeError(error)}); check it on the Servers page: ${serversPageUrl()}`);
    }
    this.personal.set(userId, { connection, secret, lastUsed: Date.now() });
    return connection;
  }

  private async personalHeaders(userId: string): Promise<Record<string, string>> {
    const header = this.config.perUserHeader;
    return header ? headerWith(header, await this.secretOf(userId)) : {};
  }

  private async secretOf(userId: string): Promise<string> {
    const secret = await readUpstreamSecret(userId, this.config.name);
    if (secret === undefined) {
      throw new Error(`${this.config.name} needs your own ${this.config.perUserHeader?.name ?? 'credential'}: add it on the Servers page: ${serversPageUrl()}`);
    }
    return secret;
  }

  private closeIdlePersonal(): void {
    const now = Date.now();
    for (const [userId, entry] of this.personal) {
      if (entry.connection.calls.size === 0 && now - entry.lastUsed > personalIdleMs) {
        this.personal.delete(userId);
        void entry.connection.close();
      }
    }
  }
}

/** What tools/list shows of the tools: a change in it is what clients are told of. */
const listingOf = (tools: ToolDefinition[]) =>
  JSON.stringify(tools.map((tool) => [tool.name, tool.title, tool.description, tool.described, tool.annotations, tool.taskSupport]));

/** The header that carries a person's own secret, as the entry's template makes it. */
const headerWith = (header: PerUserHeader, secret: string) => ({ [header.name]: header.template.replace('{secret}', secret) });

function serversPageUrl(): string {
  return new URL('/servers', getEnv().APP_URL).toString();
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
    signal.throwIfAborted();
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', stop);
      resolve();
    }, ms);
    const stop = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    signal.addEventListener('abort', stop, { once: true });
  });
}

function describeError(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return message.replace(/\s+/g, ' ').trim().slice(0, 500);
}
