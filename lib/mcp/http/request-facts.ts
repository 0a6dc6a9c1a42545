import type { Caller } from '../core/context';
import { taskToolNames } from '../core/long-calls';

/** The parts of a POSTed JSON-RPC message that the rate limits and the request log look at. */
export interface MessageSummary {
  /** The method of a request or notification; undefined for a response. */
  method?: string;
  /** The JSON-RPC id as the client sent it. */
  id?: unknown;
  taskId?: string;
  tool?: string;
  /** A tools/call that asks to run as a task. */
  asTask: boolean;
  /** A tools/call of a tool for clients without tasks (task_result…): limited as the tasks/* methods are. */
  taskTool?: boolean;
  /** Set for a batch (2025-03-26): how many messages it holds. */
  batchSize?: number;
}

/**
 * What the handler learns of one request as it answers it, for the request log: filled in as each
 * fact becomes known, so that nothing is read or parsed a second time.
 */
export interface RequestFacts {
  caller?: Caller;
  message?: MessageSummary;
  /** The session the request belongs to (or opened), once it is known to be the caller's. */
  session?: { id: string; clientName: string | null; clientVersion: string | null };
  /** A modern (sessionless) request's client, as its `_meta` names it. */
  client?: { name: string | null; version: string | null; protocolVersion: string };
}

const asString = (value: unknown) => (typeof value === 'string' ? value : undefined);

/** The summary of a parsed POST body; undefined when it is no JSON-RPC message at all. */
export function summarizeMessage(value: unknown): MessageSummary | undefined {
  if (Array.isArray(value)) return { asTask: false, batchSize: value.length };
  if (typeof value !== 'object' || value === null) return undefined;
  const message = value as Record<string, unknown>;
  const params = typeof message.params === 'object' && message.params !== null ? (message.params as Record<string, unknown>) : {};
  const method = asString(message.method);
  const tool = method === 'tools/call' ? asString(params.name) : undefined;
  const taskTool = tool !== undefined && taskToolNames.has(tool) && params.task === undefined;
  const args = taskTool && typeof params.arguments === 'object' && params.arguments !== null ? (params.arguments as Record<string, unknown>) : {};
  return {
    method,
    id: message.id,
    taskId: asString(params.taskId) ?? asString(args.taskId),
    tool,
    asTask: method === 'tools/call' && params.task !== undefined,
    ...(taskTool ? { taskTool } : {}),
  };
}
