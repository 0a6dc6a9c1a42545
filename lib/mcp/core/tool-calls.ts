import { executeTool, ToolProtocolError, type LogLevel, type ToolDefinition } from '@/lib/tools/define';
import { isTaskError, type TaskEngine, type TaskRow } from '@/lib/tasks/engine';
import { ErrorCode, RpcError } from './errors';
import { logNotification } from './log-messages';

/**
 * What both eras share when a tools/call runs: a tool run at once (one that never runs as a task), the
 * relays that carry a task's progress and log messages to the call that waits for it, and the refusal
 * of a task past the user's limits.
 */

/** The response stream of one request, as the code answering it sees it. */
export interface StreamOutlet {
  /** Sends a message before the response; turns the response into an SSE stream. */
  send(message: Record<string, unknown>): void;
  /** Whether a client is reading the response stream now. */
  isStreamRead(): boolean;
  /** The longest a waiting call's stream stays silent (see McpContext.heartbeatMs). */
  heartbeatMs: number;
}

/**
 * Runs a tool that never becomes a task, within the request: its progress goes to the client that gave
 * a progressToken, its log messages to a client whose level lets them through, and a protocol error it
 * throws becomes the request's JSON-RPC error.
 */
export async function runToolNow(
  tool: ToolDefinition,
  args: Record<string, unknown>,
  call: {
    userId: string;
    signal: AbortSignal;
    progressToken: string | number | undefined;
    send(message: Record<string, unknown>): void;
    logAllows(level: LogLevel): boolean | Promise<boolean>;
    closeStream(): void;
  },
): Promise<Record<string, unknown>> {
  const logs = new LogRelay(call.send, call.logAllows);
  let outcome;
  try {
    outcome = await executeTool(tool, args, {
      signal: call.signal,
      userId: call.userId,
      progress: (progress, total, message) => {
        if (call.progressToken === undefined) return;
        call.send({
          jsonrpc: '2.0',
          method: 'notifications/progress',
          params: { progressToken: call.progressToken, progress, ...(total !== undefined ? { total } : {}), ...(message ? { message } : {}) },
        });
      },
      status: () => {},
      // Without a task nothing keeps it: the progress message is all the client gets.
      output: () => {},
      log: (level, data, logger) => logs.log(level, data, logger),
      closeStream: call.closeStream,
      elicit: askOnlyInTasks,
      approve: askOnlyInTasks,
      createMessage: askOnlyInTasks,
    });
  } finally {
    // What the tool logged goes before its result.
    await logs.sent();
  }
  if (outcome.kind === 'error') throw new RpcError(outcome.error.code, outcome.error.message, outcome.error.data);
  return outcome.result as unknown as Record<string, unknown>;
}

/**
 * Sends a call's log messages that the client's level lets through (asked per message: a legacy
 * session's level can change while the call runs), in the order they were logged; `sent` resolves
 * once every message logged so far is out, and never rejects.
 */
export class LogRelay {
  private queue: Promise<void> = Promise.resolve();

  constructor(
    private readonly send: (message: Record<string, unknown>) => void,
    private readonly allows: (level: LogLevel) => boolean | Promise<boolean>,
  ) {}

  log(level: LogLevel, data: unknown, logger?: string): void {
    this.queue = this.queue
      .then(async () => {
        if (await this.allows(level)) this.send(logNotification(level, data, logger));
      })
      .catch((error: unknown) => console.error('A log message for the client was lost', error));
  }

  sent(): Promise<void> {
    return this.queue;
  }
}

/** Where a relay's progress goes: the response stream of the request that asked for it. */
export type ProgressOutlet = Pick<StreamOutlet, 'send' | 'isStreamRead' | 'heartbeatMs'>;

/**
 * Forwards a task's progress to the client that asked for it with a progressToken, and keeps the call
 * alive: when the tool has reported nothing for heartbeatMs, the last progress is repeated, nudged up
 * (progress must increase with every notification) and worded with the task's status. A relay that
 * takes over a stream (after a restart) starts from the last progress sent on it, not from the stored
 * progress, which lags, nor from a tool that starts over.
 */
export class ProgressRelay {
  private lastSent: number | undefined;
  private latest: number | undefined;
  private total: number | undefined;
  private message: string | undefined;
  private timer: ReturnType<typeof setTimeout> | undefined;

  constructor(
    private readonly ctx: ProgressOutlet,
    private readonly token: string | number,
    sentBefore: number | undefined,
  ) {
    this.lastSent = sentBefore;
    this.latest = sentBefore;
    this.schedule();
  }

  sync(task: TaskRow): void {
    const message = task.progressMessage ?? task.statusMessage ?? undefined;
    const news = message !== this.message;
    this.message = message;
    // Reports arrive as they are made and the stored task can be a second behind: keep the newest.
    if (task.progress === null || (this.latest !== undefined && task.progress < this.latest)) return;
    this.latest = task.progress;
    if (task.progressTotal !== null) this.total = task.progressTotal;
    if (!this.ctx.isStreamRead()) return;
    // A client that dropped the stream catches up with the latest progress when it resumes.
    if (this.lastSent === undefined || task.progress > this.lastSent) this.notify(task.progress, task.progressMessage ?? undefined);
    // A new message (partial output) is sent even when a heartbeat has already passed its number.
    else if (news && task.progressMessage) this.notify(this.lastSent + heartbeatStep(this.total), task.progressMessage);
  }

  stop(): void {
    clearTimeout(this.timer);
  }

  private heartbeat(): void {
    const ahead = this.latest !== undefined && (this.lastSent === undefined || this.latest > this.lastSent);
    const progress = ahead ? this.latest! : this.lastSent === undefined ? 0 : this.lastSent + heartbeatStep(this.total);
    if (this.ctx.isStreamRead()) this.notify(progress, this.message);
    else this.schedule();
  }

  private notify(progress: number, message: string | undefined): void {
    this.lastSent = progress;
    this.ctx.send({
      jsonrpc: '2.0',
      method: 'notifications/progress',
      params: { progressToken: this.token, progress, ...(this.total !== undefined ? { total: this.total } : {}), ...(message ? { message } : {}) },
    });
    this.schedule();
  }

  private schedule(): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.heartbeat(), this.ctx.heartbeatMs);
    this.timer.unref?.();
  }
}

/** Small enough never to pass the tool's own next report, large enough to be a different number. */
const heartbeatStep = (total: number | undefined) => (total ?? 1) * 1e-6;

/** Questions outlive requests; they need a task to belong to. */
export async function askOnlyInTasks(): Promise<never> {
  throw new ToolProtocolError(ErrorCode.InvalidRequest, 'This tool asks for input and must be called as a task');
}

export async function createTaskOrRefuse(engine: TaskEngine, input: Parameters<TaskEngine['createTask']>[0]): Promise<TaskRow> {
  try {
    return await engine.createTask(input);
  } catch (error) {
    if (isTaskError(error) && error.reason === 'limit') throw new RpcError(ErrorCode.InvalidRequest, error.message);
    throw error;
  }
}

