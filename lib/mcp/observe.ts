import pino from 'pino';
import { getMcpSessionById } from '@/db/queries/sessions';
import { getEnv } from '@/lib/env';
import { topics, type BusEvent, type EventBus } from '@/lib/tasks/bus';
import { isTerminal } from '@/lib/tasks/states';
import { handleMcp, type McpContext } from './handler';
import { getRateLimits } from './rate-limit';
import { callerOf, messageOf, trackRequest, type MessageSummary } from './request-facts';

const globalForLog = globalThis as unknown as { __mcpTaskServerLog?: pino.Logger };

/** One JSON line per event on standard output; pino escapes every value, so client text cannot forge lines. */
export function getLog(): pino.Logger {
  globalForLog.__mcpTaskServerLog ??= pino({ level: getEnv().LOG_LEVEL, base: undefined, timestamp: pino.stdTimeFunctions.isoTime });
  return globalForLog.__mcpTaskServerLog;
}

/** Client-supplied text is logged, but never more than this of it. */
const maxLoggedLength = 200;
const clip = (value: string | undefined) => (value !== undefined && value.length > maxLoggedLength ? `${value.slice(0, maxLoggedLength)}…` : value);

/** JSON text of a client value, or a placeholder for one too deep to write. */
function safeJson(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return '(too deeply nested)';
  }
}

/** What a JSON reply says: its error code, or the task it is about. */
interface ReplyOutcome {
  rpcError?: number;
  errorMessage?: string;
  taskId?: string;
}

async function readReply(response: Response): Promise<ReplyOutcome | undefined> {
  try {
    const body = (await response.json()) as { error?: { code?: unknown; message?: unknown }; result?: { task?: { taskId?: unknown }; taskId?: unknown } };
    if (Array.isArray(body) || typeof body !== 'object' || body === null) return undefined;
    if (body.error) {
      return {
        rpcError: typeof body.error.code === 'number' ? body.error.code : undefined,
        errorMessage: typeof body.error.message === 'string' ? body.error.message : undefined,
      };
    }
    const taskId = body.result?.task?.taskId ?? body.result?.taskId;
    return { taskId: typeof taskId === 'string' ? taskId : undefined };
  } catch {
    return undefined;
  }
}

const lookups = new Set(['tasks/get', 'tasks/result', 'tasks/cancel']);
const auditEvents: Record<string, string> = { 'tasks/get': 'task.retrieved', 'tasks/result': 'task.result', 'tasks/cancel': 'task.cancel' };

/** The audit event a request is, if any: creating, reading or cancelling a task. */
function auditEventOf(message: MessageSummary | undefined, reply: ReplyOutcome | undefined, streamed: boolean): string | undefined {
  if (!message?.method || reply?.rpcError !== undefined) return undefined;
  if (message.asTask) return reply?.taskId ? 'task.created' : undefined;
  if (!lookups.has(message.method)) return undefined;
  return streamed ? `${auditEvents[message.method]}.waiting` : auditEvents[message.method];
}

/**
 * The MCP endpoint with its request log and the limits that need to see replies: every request gets
 * one log line (time, request id, user, client, method, task, status, duration; never a token or an
 * argument value), and a lookup of a task id the user has no task with counts against them.
 */
export async function observeMcp(request: Request, ctx: McpContext): Promise<Response> {
  const started = performance.now();
  const requestId = crypto.randomUUID();
  trackRequest(request, ctx.maxBodyBytes);
  const response = await handleMcp(request, ctx);
  const streamed = (response.headers.get('content-type') ?? '').startsWith('text/event-stream');
  const reply = streamed || !response.body ? undefined : await readReply(response.clone());
  const message = await messageOf(request);
  const caller = callerOf(request);
  if (caller && message?.method && lookups.has(message.method) && reply?.rpcError === -32602 && reply.errorMessage?.endsWith('Task not found')) {
    await getRateLimits().noteUnknownTask(caller.userId);
  }
  const sessionId = response.headers.get('mcp-session-id') ?? request.headers.get('mcp-session-id');
  const session = caller && sessionId ? getMcpSessionById(sessionId) : undefined;
  getLog().info(
    {
      requestId,
      userId: caller?.userId,
      client: session && session.userId === caller?.userId ? clip(`${session.clientName}/${session.clientVersion}`) : undefined,
      httpMethod: request.method,
      method: clip(message?.method),
      rpcId: message?.id !== undefined ? clip(safeJson(message.id)) : undefined,
      batchSize: message?.batchSize,
      tool: clip(message?.tool),
      taskId: clip(message?.taskId ?? reply?.taskId),
      event: auditEventOf(message, reply, streamed),
      status: response.status,
      rpcError: reply?.rpcError,
      durationMs: Math.round((performance.now() - started) * 10) / 10,
    },
    'mcp request',
  );
  return response;
}

/** Records every task's end (completed, failed or cancelled, by whom), whichever side ended it. */
export function logTaskEnds(bus: EventBus): () => void {
  return bus.subscribe(topics.allTasks, (event: BusEvent) => {
    if (event.type !== 'task-changed' || !event.transition || !isTerminal(event.task.status)) return;
    getLog().info({ event: `task.${event.task.status}`, taskId: event.task.id, userId: event.task.userId, tool: event.task.toolName }, 'task ended');
  });
}
