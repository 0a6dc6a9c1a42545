import type { McpSession } from '@/db/queries/sessions';
import { findTool, tools } from '@/lib/tools';
import { describeTool, executeTool, ToolProtocolError } from '@/lib/tools/define';
import { isTaskError, type TaskEngine, type TaskRow } from '@/lib/tasks/engine';
import { isTerminal } from '@/lib/tasks/states';
import { randomBytes } from 'node:crypto';
import { ErrorCode, RpcError } from './errors';
import { canReceive, carryQuestions, inputRequestId, requestFor, sentOnGetStream, withdrawalFor } from './input-requests';
import {
  callToolParamsSchema,
  listParamsSchema,
  parseParams,
  taskIdParamsSchema,
  tasksProtocolVersion,
} from './schema';
import { modelImmediateResponseKey, taskErrorToRpc, taskResultPayload, toTask } from './task-messages';

/** What a method handler gets besides its params. */
export interface RequestContext {
  engine: TaskEngine;
  session: McpSession;
  userId: string;
  /** Aborts when the client cancels the request or goes away. */
  signal: AbortSignal;
  /** Sends a message before the response; turns the response into an SSE stream. */
  send(message: Record<string, unknown>): void;
  /** Turns the response into an SSE stream now, for a response that may take long. */
  openStream(): void;
}

type MethodHandler = (params: unknown, ctx: RequestContext) => Promise<Record<string, unknown>>;

const hasTasks = (session: McpSession) => session.protocolVersion === tasksProtocolVersion;

function visibleTools(session: McpSession) {
  // A client without tasks could never call a tool that requires them.
  return hasTasks(session) ? tools : tools.filter((tool) => tool.taskSupport !== 'required');
}

async function callTool(rawParams: unknown, ctx: RequestContext): Promise<Record<string, unknown>> {
  // A session without tasks ignores task metadata entirely, even malformed.
  const { task: _ignored, ...withoutTask } = (rawParams ?? {}) as Record<string, unknown>;
  const params = parseParams(callToolParamsSchema, hasTasks(ctx.session) ? rawParams : withoutTask);
  const tool = findTool(params.name);
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

  if (asTask) {
    if (tool.taskSupport === 'forbidden') {
      throw new RpcError(ErrorCode.MethodNotFound, `Tool ${tool.name} does not support task-augmented calls; call it without "task"`);
    }
    const row = createTaskOrRefuse(ctx, {
      userId: ctx.userId,
      sessionId: ctx.session.id,
      client: { name: ctx.session.clientName, version: ctx.session.clientVersion },
      tool,
      args,
      requestedTtlMs: params.task?.ttl,
      progressToken,
    });
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

  const outcome = await executeTool(tool, args, {
    signal: ctx.signal,
    progress: (progress, total, message) => {
      if (progressToken === undefined) return;
      ctx.send({
        jsonrpc: '2.0',
        method: 'notifications/progress',
        params: { progressToken, progress, ...(total !== undefined ? { total } : {}), ...(message ? { message } : {}) },
      });
    },
    status: () => {},
    elicit: askOnlyInTasks,
    createMessage: askOnlyInTasks,
  });
  if (outcome.kind === 'error') throw new RpcError(outcome.error.code, outcome.error.message, outcome.error.data);
  return outcome.result as unknown as Record<string, unknown>;
}

/**
 * Carries a task's questions on one tasks/result stream: each open question once, and a withdrawal for
 * each copy sent here that was answered elsewhere.
 */
class QuestionRelay {
  private readonly sent = new Map<string, string>();
  private readonly withdrawn = new Set<string>();

  constructor(
    private readonly ctx: RequestContext,
    private readonly taskId: string,
  ) {}

  sync(task: TaskRow): void {
    for (const input of this.ctx.engine.inputs.listForTask(this.taskId)) {
      const sentId = this.sent.get(input.id);
      if (input.status === 'pending') {
        // A client already answering through a task of its own, or asked on its open GET stream, is
        // not asked again.
        if (sentId || input.clientTaskId || !canReceive(this.ctx.session, input.kind) || sentOnGetStream(this.ctx.session.id, input.id)) continue;
        const id = inputRequestId(input.id, randomBytes(6).toString('base64url'));
        this.sent.set(input.id, id);
        this.ctx.send(requestFor(input, id, this.ctx.session, task.expiresAt));
      } else if (sentId && !input.clientTaskId && !this.withdrawn.has(input.id) && input.answeredVia !== sentId) {
        this.withdrawn.add(input.id);
        this.ctx.send(withdrawalFor(input, sentId));
      }
    }
  }
}

/** Questions outlive requests; they need a task to belong to. */
async function askOnlyInTasks(): Promise<never> {
  throw new ToolProtocolError(ErrorCode.InvalidRequest, 'This tool asks for input and must be called as a task');
}

function createTaskOrRefuse(ctx: RequestContext, input: Parameters<TaskEngine['createTask']>[0]) {
  try {
    return ctx.engine.createTask(input);
  } catch (error) {
    if (isTaskError(error) && error.reason === 'limit') throw new RpcError(ErrorCode.InvalidRequest, error.message);
    throw error;
  }
}

const methods: Record<string, { handler: MethodHandler; needsTasks?: boolean }> = {
  ping: { handler: async () => ({}) },

  'tools/list': {
    handler: async (_params, ctx) => ({ tools: visibleTools(ctx.session).map(describeTool) }),
  },

  'tools/call': { handler: callTool },

  'tasks/get': {
    needsTasks: true,
    handler: async (rawParams, ctx) => {
      const { taskId } = parseParams(taskIdParamsSchema, rawParams);
      try {
        return toTask(ctx.engine.getTask(taskId, ctx.userId));
      } catch (error) {
        throw taskErrorToRpc(error, 'Failed to retrieve task');
      }
    },
  },

  'tasks/result': {
    needsTasks: true,
    handler: async (rawParams, ctx) => {
      const { taskId } = parseParams(taskIdParamsSchema, rawParams);
      try {
        let row = ctx.engine.getTask(taskId, ctx.userId);
        if (!isTerminal(row.status)) {
          ctx.openStream();
          const relay = new QuestionRelay(ctx, taskId);
          const release = carryQuestions(ctx.session.id, taskId);
          try {
            row = await ctx.engine.waitForTerminal(taskId, ctx.userId, ctx.signal, (task) => relay.sync(task));
          } finally {
            release();
          }
          relay.sync(row);
        }
        return taskResultPayload(row);
      } catch (error) {
        throw taskErrorToRpc(error, 'Failed to retrieve task result');
      }
    },
  },

  'tasks/list': {
    needsTasks: true,
    handler: async (rawParams, ctx) => {
      const { cursor } = parseParams(listParamsSchema, rawParams);
      try {
        const page = ctx.engine.listTasks(ctx.userId, cursor);
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
        return toTask(ctx.engine.cancelTask(taskId, ctx.userId, 'client'));
      } catch (error) {
        throw taskErrorToRpc(error, 'Failed to cancel task');
      }
    },
  },
};

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
    tools: { listChanged: false },
    ...(protocolVersion === tasksProtocolVersion
      ? { tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } } }
      : {}),
  };
}
