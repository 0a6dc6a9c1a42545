import { randomUUID } from 'node:crypto';
import pino from 'pino';
import { getEnv } from '@/lib/env';
import { topics, type BusEvent, type EventBus } from '@/lib/tasks/bus';
import { isTerminal } from '@/lib/tasks/states';
import type { McpContext } from '../core/context';
import { unknownTaskWords } from '../core/long-calls';
import { isoTimestamp } from '../core/timestamps';
import { handleMcp } from './endpoint';
import { lineBatches, type LineBatches } from './log-lines';
import { getRateLimits } from './rate-limit';
import { isStreamReply, type McpHttpRequest, type McpReply } from './exchange';
import type { MessageSummary, RequestFacts } from './request-facts';

const globalForLog = globalThis as unknown as { __mcpTaskServerLog?: { logger: pino.Logger; destination: LineBatches } };

/** How long a log line may wait in the buffer when the server is quiet. */
const logFlushMs = 200;

/** The line that says how many lines a reader that did not read has missed (pino's own format). */
const droppedLine = (count: number) =>
  `${JSON.stringify({ level: 40, time: isoTimestamp(Date.now()), event: 'log.dropped', count, msg: `${count} log lines dropped: standard output was not read` })}\n`;

/** pino's ISO time, made once a millisecond: a busy server writes several lines in each. */
let timeMs = -1;
let timeField = '';
function isoTime(): string {
  const now = Date.now();
  if (now !== timeMs) {
    timeMs = now;
    timeField = `,"time":"${isoTimestamp(now)}"`;
  }
  return timeField;
}

/**
 * One JSON line per event on standard output; pino escapes every value, so client text cannot forge
 * lines. Lines are buffered and written in batches off the request's path (a busy server writes
 * many lines per write; a quiet one within `logFlushMs`); what is still buffered at exit is written then.
 */
function getLog(): { logger: pino.Logger; destination: LineBatches } {
  if (!globalForLog.__mcpTaskServerLog) {
    const destination = lineBatches(1, { droppedLine });
    setInterval(() => destination.flush(), logFlushMs).unref();
    process.once('exit', () => destination.flush(true));
    const logger = pino({ level: getEnv().LOG_LEVEL, base: undefined, timestamp: isoTime }, destination);
    globalForLog.__mcpTaskServerLog = { logger, destination };
  }
  return globalForLog.__mcpTaskServerLog;
}

/**
 * The line of one request, at level info, as pino writes every other line (level, time, the fields,
 * msg), made with one JSON.stringify of the fields: pino's serialiser, which walks the fields and
 * escapes each short string character by character in JavaScript, was the largest part of a
 * `tasks/get`'s own work. JSON.stringify escapes every value too: client text cannot forge lines here
 * either.
 */
function logRequest(fields: Record<string, string | number | undefined>): void {
  const { logger, destination } = getLog();
  if (!logger.isLevelEnabled('info')) return;
  const json = JSON.stringify(fields);
  destination.write(`{"level":${logger.levels.values.info}${isoTime()}${json.length > 2 ? `,${json.slice(1, -1)}` : ''},"msg":"mcp request"}\n`);
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
  storage?: string;
  taskId?: string;
  /** 2026-07-28: "task" for a CreateTaskResult. */
  resultType?: string;
  /** The first text of a tool's error result: task_result and its kin say so of a task id the user has no task with. */
  firstText?: string;
}

function outcomeOf(json: unknown): ReplyOutcome | undefined {
  if (Array.isArray(json) || typeof json !== 'object' || json === null) return undefined;
  const body = json as {
    error?: { code?: unknown; message?: unknown; data?: { storage?: unknown } };
    result?: { task?: { taskId?: unknown }; taskId?: unknown; resultType?: unknown; isError?: unknown; content?: Array<{ text?: unknown }> };
  };
  if (body.error) {
    return {
      rpcError: typeof body.error.code === 'number' ? body.error.code : undefined,
      errorMessage: typeof body.error.message === 'string' ? body.error.message : undefined,
      storage: typeof body.error.data?.storage === 'string' ? body.error.data.storage : undefined,
    };
  }
  const taskId = body.result?.task?.taskId ?? body.result?.taskId;
  const resultType = body.result?.resultType;
  const firstText = body.result?.isError === true ? body.result.content?.[0]?.text : undefined;
  return {
    taskId: typeof taskId === 'string' ? taskId : undefined,
    resultType: typeof resultType === 'string' ? resultType : undefined,
    ...(typeof firstText === 'string' ? { firstText } : {}),
  };
}

const lookups = new Set(['tasks/get', 'tasks/result', 'tasks/cancel', 'tasks/update']);
const auditEvents: Record<string, string> = {
  'tasks/get': 'task.retrieved',
  'tasks/result': 'task.result',
  'tasks/cancel': 'task.cancel',
  'tasks/update': 'task.answered',
};

/** The audit event a request is, if any: creating, reading or cancelling a task. */
function auditEventOf(message: MessageSummary | undefined, outcome: ReplyOutcome | undefined, streamed: boolean): string | undefined {
  if (!message?.method || outcome?.rpcError !== undefined) return undefined;
  if (message.asTask || outcome?.resultType === 'task') return outcome?.taskId ? 'task.created' : undefined;
  if (!lookups.has(message.method)) return undefined;
  return streamed ? `${auditEvents[message.method]}.waiting` : auditEvents[message.method];
}

/**
 * The MCP endpoint with its request log and the limits that need to see replies: every request gets
 * one log line (time, request id, user, client, method, task, status, duration; never a token or an
 * argument value), and a lookup of a task id the user has no task with counts against them. The facts
 * come from the handler as it answers, and the reply is read as the object it is, before it is written.
 */
export async function observeMcp(request: McpHttpRequest, ctx: McpContext): Promise<McpReply> {
  const started = performance.now();
  const facts: RequestFacts = {};
  const reply = await handleMcp(request, ctx, facts);
  const streamed = isStreamReply(reply);
  const outcome = streamed ? undefined : outcomeOf(reply.json);
  const { caller, message, session, client } = facts;
  const unknownTask =
    (message?.method !== undefined && lookups.has(message.method) && outcome?.rpcError === -32602 && outcome.errorMessage?.endsWith('Task not found')) ||
    (message?.taskTool && outcome?.firstText?.startsWith(unknownTaskWords));
  if (caller && unknownTask) {
    await getRateLimits().noteUnknownTask(caller.userId);
  }
  logRequest({
    requestId: randomUUID(),
    userId: caller?.userId,
    client: session ? clip(`${session.clientName}/${session.clientVersion}`) : client ? clip(`${client.name}/${client.version}`) : undefined,
    protocolVersion: client?.protocolVersion,
    httpMethod: request.method,
    method: clip(message?.method),
    rpcId: message?.id !== undefined ? clip(safeJson(message.id)) : undefined,
    batchSize: message?.batchSize,
    tool: clip(message?.tool),
    taskId: clip(message?.taskId ?? outcome?.taskId),
    event: auditEventOf(message, outcome, streamed),
    status: reply.status,
    rpcError: outcome?.rpcError,
    // Why storage refused it (full, busy, readonly, gone, io, unreachable).
    storage: outcome?.storage,
    durationMs: Math.round((performance.now() - started) * 10) / 10,
  });
  return reply;
}

/** Records every task's end (completed, failed or cancelled, by whom), whichever side ended it. */
export function logTaskEnds(bus: EventBus): () => void {
  return bus.subscribe(topics.allTasks, (event: BusEvent) => {
    // The instance where the task ended logs it.
    if (event.type !== 'task-changed' || event.remote || !event.transition || !isTerminal(event.task.status)) return;
    getLog().logger.info({ event: `task.${event.task.status}`, taskId: event.task.id, userId: event.task.userId, tool: event.task.toolName }, 'task ended');
  });
}
