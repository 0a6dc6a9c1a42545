import { randomBytes } from 'node:crypto';
import { setMcpSessionLogLevel, type McpSession } from '@/db/queries/sessions';
import { topics } from '@/lib/tasks/bus';
import type { TaskEngine, TaskRow } from '@/lib/tasks/engine';
import { isTerminal } from '@/lib/tasks/states';
import { findToolFor, toolsFor } from '@/lib/tools/catalogue';
import { describeTool, type CallToolResult } from '@/lib/tools/define';
import { sharedListings } from '../core/json-text';
import { ErrorCode, RpcError } from '../core/errors';
import { logNotification } from '../core/log-messages';
import {
  callToolParamsSchema,
  listParamsSchema,
  parseParams,
  requireNoCursor,
  setLevelParamsSchema,
  taskIdParamsSchema,
  tasksProtocolVersion,
} from '../core/schema';
import { modelImmediateResponseKey, taskErrorToRpc, taskResultPayload, toTask } from '../core/task-messages';
import { admittingEarlyAnswers, describeTaskTools, runTaskTool, stillRunningResult, taskToolNames, type FollowTask } from '../core/long-calls';
import type { McpContext } from '../core/context';
import { createTaskOrRefuse, LogRelay, ProgressRelay, runToolNow } from '../core/tool-calls';
import {
  canBeSent,
  canReceive,
  carryQuestions,
  inputRequestId,
  isCopyAnswered,
  isLinkAcceptedBy,
  leaveCopy,
  linkCompletionFor,
  receivesLink,
  requestFor,
  sentOnGetStream,
  takeLeftCopy,
  withdrawalFor,
  withdrawnByTasksCancel,
  type RelatedTask,
} from './input-requests';
import { isLoggedFor } from './logging';
import { callStreamKey, resultStreamKey } from './session-streams';
import type { StopSignal } from '@/lib/tasks/wait';

/** What a method handler gets besides its params. */
export interface RequestContext {
  engine: TaskEngine;
  session: McpSession;
  userId: string;
  /** The request's JSON-RPC id. */
  requestId: string | number;
  /** Aborts when the client cancels the request, the session ends or the server stops; not when the client goes away. */
  signal: AbortSignal;
  /** The same as `signal`, for a wait, where there is one without making the signal (see StopSignal). */
  readonly stop?: StopSignal;
  /** See McpContext.heartbeatMs. */
  heartbeatMs: number;
  /** How long a client waits for a call before it gives up, by its name: McpContext.answerWithinMs. */
  answerWindowOf: McpContext['answerWithinMs'];
  /** Sends a message before the response; turns the response into an SSE stream. */
  send(message: Record<string, unknown>): void;
  /**
   * Turns the response into an SSE stream now, for a response that may take long; `resumableAs` names
   * the stream when something else (a task) outlives the request.
   */
  openStream(resumableAs?: string): void;
  /** Resolves once what a task's questions changed has reached the streams (a result must come after it). */
  questionRelaysSettled(taskId: string): Promise<void>;
  /** Whether a client is reading the response stream now (it may have dropped it, to resume later). */
  isStreamRead(): boolean;
  /**
   * Closes the connection of the response stream while the request goes on; the client resumes the
   * stream with Last-Event-ID. Absent where the response cannot be resumed.
   */
  disconnect?(): void;
}

type MethodHandler = (params: unknown, ctx: RequestContext) => Promise<Record<string, unknown>>;

const hasTasks = (session: McpSession) => session.protocolVersion === tasksProtocolVersion;

/** A client that declared tasks at initialize asks for one when it wants one, and has tasks/result. */
const usesTasks = (session: McpSession) => hasTasks(session) && session.clientCapabilities?.tasks !== undefined;

/** The answer window of this session's client (see McpContext.answerWithinMs). */
const answerWindow = (ctx: RequestContext) => ctx.answerWindowOf(ctx.session.clientName);

/** How long a plain call waits for its task before answering "still running": never for a client with tasks. */
export const earlyAnswerWindow = (ctx: RequestContext) => (usesTasks(ctx.session) ? 0 : answerWindow(ctx));

async function listTools(rawParams: unknown, ctx: RequestContext): Promise<Record<string, unknown>> {
  requireNoCursor(rawParams, 'tools/list');
  const tools = await toolsFor(ctx.userId);
  // A client without tasks could never call a tool that requires them.
  const callable = hasTasks(ctx.session) ? tools : tools.filter((tool) => tool.taskSupport !== 'required');
  const answersEarly = earlyAnswerWindow(ctx) > 0;
  const listed = callable.map((tool) => {
    const described = describeTool(tool, hasTasks(ctx.session));
    return answersEarly && tool.taskSupport === 'optional' ? admittingEarlyAnswers(described) : described;
  });
  return { tools: sharedListings(usesTasks(ctx.session) ? listed : [...listed, ...describeTaskTools(answerWindow(ctx))]) };
}

async function callTool(rawParams: unknown, ctx: RequestContext): Promise<Record<string, unknown>> {
  // A session without tasks ignores task metadata entirely, even malformed.
  const { task: _ignored, ...withoutTask } = (rawParams ?? {}) as Record<string, unknown>;
  const params = parseParams(callToolParamsSchema, hasTasks(ctx.session) ? rawParams : withoutTask);
  if (taskToolNames.has(params.name) && params.task === undefined) return callTaskTool(params.name, params.arguments ?? {}, params._meta?.progressToken, ctx);
  const tool = await findToolFor(params.name, ctx.userId);
  if (!tool) throw new RpcError(ErrorCode.InvalidParams, `Unknown tool: ${params.name}`);
  if (tool.requiresClient && !canReceive(ctx.session, tool.requiresClient)) {
    throw new RpcError(
      ErrorCode.InvalidRequest,
      `Tool ${tool.name} needs a client that supports ${tool.requiresClient}: declare the "${tool.requiresClient}" capability at initialize`,
    );
  }
  const progressToken = params._meta?.progressToken;
  const args = params.arguments ?? {};
  const asTask = params.task !== undefined;
  const newTask = {
    userId: ctx.userId,
    sessionId: ctx.session.id,
    client: { name: ctx.session.clientName, version: ctx.session.clientVersion },
    protocolVersion: ctx.session.protocolVersion,
    tool,
    args,
    progressToken,
  };

  if (asTask) {
    if (tool.taskSupport === 'forbidden') {
      throw new RpcError(ErrorCode.MethodNotFound, `Tool ${tool.name} does not support task-augmented calls; call it without "task"`);
    }
    const row = await createTaskOrRefuse(ctx.engine, { ...newTask, requestedTtlMs: params.task?.ttl });
    return {
      task: toTask(row),
      _meta: {
        [modelImmediateResponseKey]: `Started ${tool.name} as task ${row.id}. Its result will be available when the task completes.`,
      },
    };
  }

  if (tool.taskSupport === 'required') {
    throw new RpcError(
      ErrorCode.MethodNotFound,
      hasTasks(ctx.session)
        ? `Tool ${tool.name} must be called as a task: add "task": {} to the tools/call params`
        : `Tool ${tool.name} requires tasks, which protocol version ${ctx.session.protocolVersion} does not have`,
    );
  }

  if (tool.taskSupport === 'optional') {
    // A plain call of a tool that can run as a task still becomes one: durable, in the dashboard, able to
    // ask questions, and unharmed by the client going away. The call answers with the task's result.
    const row = await createTaskOrRefuse(ctx.engine, { ...newTask, callRequestId: ctx.requestId });
    ctx.openStream(callStreamKey(row.id));
    return followCallTask(ctx, row.id, progressToken, undefined, { withinMs: earlyAnswerWindow(ctx), release: true });
  }

  return runToolNow(tool, args, {
    userId: ctx.userId,
    signal: ctx.signal,
    progressToken,
    send: (message) => ctx.send(message),
    logAllows: (level) => isLoggedFor(ctx.session.id, level),
    closeStream: () => ctx.disconnect?.(),
  });
}

/**
 * task_result and the other tools for clients without tasks. task_result follows the task as the plain
 * call did, questions and progress included, for at most the client's window.
 */
async function callTaskTool(name: string, args: Record<string, unknown>, progressToken: string | number | undefined, ctx: RequestContext) {
  const follow: FollowTask = async (task, withinMs) => {
    if (isTerminal(task.status)) return taskResultPayload(task, false) as unknown as CallToolResult;
    ctx.openStream();
    return (await followCallTask(ctx, task.id, progressToken, undefined, { withinMs, release: false })) as unknown as CallToolResult;
  };
  return runTaskTool(name, args, { engine: ctx.engine, windowMs: answerWindow(ctx), follow }, {
    userId: ctx.userId,
    signal: ctx.signal,
    progressToken: undefined,
    send: (message) => ctx.send(message),
    logAllows: (level) => isLoggedFor(ctx.session.id, level),
    closeStream: () => ctx.disconnect?.(),
  });
}

/**
 * Carries the task of a plain call on the call's stream until it ends: its progress (with the client's
 * progressToken, and a heartbeat when the tool is quiet), its questions, and then exactly what
 * tasks/result would return. Nothing on the stream names the task: the client asked for none. With an
 * answer window (`answer.withinMs` > 0), a task still running when it closes is answered "still running"
 * instead, and goes on; `answer.release` says that the call that started the task no longer waits for it.
 */
export async function followCallTask(
  ctx: RequestContext,
  taskId: string,
  progressToken: string | number | undefined,
  progressSent: number | undefined,
  answer: { withinMs: number; release: boolean },
): Promise<Record<string, unknown>> {
  const windowClosed = answer.withinMs > 0 ? AbortSignal.timeout(answer.withinMs) : undefined;
  const questions = new QuestionRelay(ctx, taskId, 'unnamed');
  const progress = progressToken !== undefined ? new ProgressRelay(ctx, progressToken, progressSent) : undefined;
  // Log messages are not stored: only a call that is being followed carries them.
  const logs = new LogRelay((message) => ctx.send(message), (level) => isLoggedFor(ctx.session.id, level));
  const stopFollowingEvents = ctx.engine.bus.subscribe(topics.task(taskId), (event) => {
    if (event.type === 'task-log') logs.log(event.level, event.data, event.logger);
    if (event.type === 'task-stream-close') ctx.disconnect?.();
  });
  try {
    const row = await ctx.engine.waitForTerminal(
      taskId,
      ctx.userId,
      windowClosed ? AbortSignal.any([ctx.signal, windowClosed]) : (ctx.stop ?? ctx.signal),
      async (task) => {
        await questions.sync(task);
        progress?.sync(task);
      },
      progress && ((task) => progress.sync(task)),
    );
    await questions.sync(row);
    progress?.sync(row);
    await logs.sent();
    return taskResultPayload(row, false);
  } catch (error) {
    if (windowClosed?.aborted && !ctx.signal.aborted) {
      const task = await ctx.engine.getTask(taskId, ctx.userId);
      await logs.sent();
      // Ended just as the window closed: its result is the answer after all.
      if (isTerminal(task.status)) return taskResultPayload(task, false);
      questions.leaveOutstanding();
      if (answer.release) await ctx.engine.releaseCall(taskId, ctx.userId, 'answered');
      return stillRunningResult(task, ctx.engine.taskPageUrl(taskId), answer.withinMs) as unknown as Record<string, unknown>;
    }
    throw taskErrorToRpc(error, 'Failed to follow the task of this call');
  } finally {
    stopFollowingEvents();
    progress?.stop();
  }
}

/**
 * Carries a task's questions on one tasks/result (or plain call) stream: each open question once, and
 * for each copy sent here that was answered elsewhere, its withdrawal (and, for a link, its completion).
 */
class QuestionRelay {
  // Made when first used: most tasks ask nothing, and thousands of streams may wait on theirs at once.
  private sentIds?: Map<string, string>;
  private settledIds?: Set<string>;
  private toldIds?: Set<string>;
  private handedOverIds?: Set<string>;

  /** The id of the copy of each question sent here. */
  private get sent(): Map<string, string> {
    return (this.sentIds ??= new Map());
  }

  /** Questions whose copy sent here was settled elsewhere, and told so. */
  private get settledElsewhere(): Set<string> {
    return (this.settledIds ??= new Set());
  }

  private get toldWhereToAnswer(): Set<string> {
    return (this.toldIds ??= new Set());
  }

  /** Questions whose copy sent here the client took as a task of its own: asked again if that task is given up. */
  private get handedOver(): Set<string> {
    return (this.handedOverIds ??= new Set());
  }

  constructor(
    private readonly ctx: RequestContext,
    private readonly taskId: string,
    private readonly relatedTask: RelatedTask,
  ) {}

  /**
   * Resolves once the task's questions, as they are now, are carried. The wait for the task awaits each
   * sync before the next, so syncs never overlap.
   */
  async sync(task: TaskRow): Promise<void> {
    const sessionId = this.ctx.session.id;
    for (const input of await this.ctx.engine.inputs.listForTask(this.taskId)) {
      let sentId = this.sent.get(input.id);
      if (input.status === 'pending') {
        if (input.clientTaskId) {
          if (sentId && isCopyAnswered(sessionId, sentId)) this.handedOver.add(input.id);
          continue;
        }
        if (sentId && this.handedOver.delete(input.id)) {
          this.sent.delete(input.id);
          sentId = undefined;
        }
        const left = sentId ? undefined : takeLeftCopy(sessionId, input.id);
        if (left) {
          this.sent.set(input.id, left);
          continue;
        }
        if (!canBeSent(this.ctx.session, input.kind)) {
          await this.tellWhereToAnswer(input.id, task);
          continue;
        }
        // A client asked here already, or on its open GET stream, or whose person opened the link, is not asked again.
        if (sentId || sentOnGetStream(sessionId, input.id) || isLinkAcceptedBy(sessionId, input.id)) continue;
        const id = inputRequestId(input.id, randomBytes(6).toString('base64url'));
        this.sent.set(input.id, id);
        const asking = { expiresAt: task.expiresAt, pageUrl: this.ctx.engine.taskPageUrl(this.taskId) };
        this.ctx.send(requestFor(input, id, this.ctx.session, asking, this.relatedTask));
      } else if (sentId && input.answeredVia !== sentId && !this.settledElsewhere.has(input.id)) {
        this.settledElsewhere.add(input.id);
        if (!isCopyAnswered(sessionId, sentId) && !withdrawnByTasksCancel(this.ctx.session, input.kind)) {
          this.ctx.send(withdrawalFor(input, sentId, this.relatedTask));
        }
        if (receivesLink(this.ctx.session, input.kind)) this.ctx.send(linkCompletionFor(input, this.relatedTask));
      }
    }
  }

  /** The call ends before the task: copies its client has not answered yet are left for the next call that follows it. */
  leaveOutstanding(): void {
    for (const [inputId, sentId] of this.sent) {
      if (!this.settledElsewhere.has(inputId) && !isCopyAnswered(this.ctx.session.id, sentId)) leaveCopy(this.ctx.session.id, inputId, sentId);
    }
  }

  /**
   * A plain call's client that cannot be asked would otherwise see nothing but keep-alives (it may have
   * sent no progressToken for the heartbeats): a log message tells it, once per question, what the
   * task's status says, where the person can answer. A task's client reads the status with tasks/get.
   */
  private async tellWhereToAnswer(inputId: string, task: TaskRow): Promise<void> {
    if (this.relatedTask === 'named' || this.toldWhereToAnswer.has(inputId) || !task.statusMessage) return;
    this.toldWhereToAnswer.add(inputId);
    if (await isLoggedFor(this.ctx.session.id, 'notice')) this.ctx.send(logNotification('notice', task.statusMessage, 'mcp-task-server'));
  }
}

/** What tasks/result returns for a task still active: on the request's stream, its questions, then its result once it ends. */
async function resultOnceEnded(ctx: RequestContext, taskId: string): Promise<Record<string, unknown>> {
  ctx.openStream(resultStreamKey(taskId));
  const relay = new QuestionRelay(ctx, taskId, 'named');
  const release = carryQuestions(ctx.session.id, taskId);
  let row: TaskRow;
  try {
    row = await ctx.engine.waitForTerminal(taskId, ctx.userId, ctx.stop ?? ctx.signal, (task) => relay.sync(task));
  } finally {
    release();
  }
  await relay.sync(row);
  await ctx.questionRelaysSettled(taskId);
  return taskResultPayload(row);
}

/**
 * The methods. `streams`: the method may send messages before its result, or wait long, so its answer
 * may become an SSE stream; every other method answers with its result alone, at once.
 */
const methods: Record<string, { handler: MethodHandler; needsTasks?: boolean; streams?: true }> = {
  ping: { handler: async () => ({}) },

  'tools/list': { handler: listTools },

  'tools/call': { handler: callTool, streams: true },

  'logging/setLevel': {
    handler: async (rawParams, ctx) => {
      const { level } = parseParams(setLevelParamsSchema, rawParams);
      await setMcpSessionLogLevel(ctx.session.id, level);
      return {};
    },
  },

  'tasks/get': {
    needsTasks: true,
    handler: async (rawParams, ctx) => {
      const { taskId } = parseParams(taskIdParamsSchema, rawParams);
      try {
        return toTask(await ctx.engine.getTaskStatus(taskId, ctx.userId));
      } catch (error) {
        throw taskErrorToRpc(error, 'Failed to retrieve task');
      }
    },
  },

  'tasks/result': {
    needsTasks: true,
    streams: true,
    // Not an async function: its suspended frame would keep the task as first read, the whole row, for as
    // long as the task works, in each of thousands of waiting calls.
    handler: (rawParams, ctx) => {
      const { taskId } = parseParams(taskIdParamsSchema, rawParams);
      return ctx.engine
        .getTask(taskId, ctx.userId)
        .then((row) => (isTerminal(row.status) ? taskResultPayload(row) : resultOnceEnded(ctx, taskId)))
        .catch((error: unknown) => {
          throw taskErrorToRpc(error, 'Failed to retrieve task result');
        });
    },
  },

  'tasks/list': {
    needsTasks: true,
    handler: async (rawParams, ctx) => {
      const { cursor } = parseParams(listParamsSchema, rawParams);
      try {
        const page = await ctx.engine.listTasks(ctx.userId, cursor);
        return { tasks: page.tasks.map(toTask), ...(page.nextCursor ? { nextCursor: page.nextCursor } : {}) };
      } catch (error) {
        throw taskErrorToRpc(error, 'Failed to list tasks');
      }
    },
  },

  'tasks/cancel': {
    needsTasks: true,
    handler: async (rawParams, ctx) => {
      const { taskId } = parseParams(taskIdParamsSchema, rawParams);
      try {
        return toTask(await ctx.engine.cancelTask(taskId, ctx.userId, 'client'));
      } catch (error) {
        throw taskErrorToRpc(error, 'Failed to cancel task');
      }
    },
  },
};

/** Whether a method answers with its result alone, never a stream (an unknown method's error included). */
export function answersAtOnce(method: string): boolean {
  return !Object.hasOwn(methods, method) || methods[method].streams !== true;
}

/** Runs one request's method, or throws -32601 when this session has no such method. */
export function dispatch(method: string, params: unknown, ctx: RequestContext): Promise<Record<string, unknown>> {
  const entry = Object.hasOwn(methods, method) ? methods[method] : undefined;
  if (!entry || (entry.needsTasks && !hasTasks(ctx.session))) {
    throw new RpcError(ErrorCode.MethodNotFound, `Method not found: ${method}`);
  }
  return entry.handler(params, ctx);
}

export function serverCapabilities(protocolVersion: string) {
  return {
    tools: { listChanged: true },
    logging: {},
    ...(protocolVersion === tasksProtocolVersion
      ? { tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } } }
      : {}),
  };
}
