import { isTaskError, type TaskRow, type TaskStatusRow } from '@/lib/tasks/engine';
import { ErrorCode, RpcError } from './errors';
import { isoTimestamp } from './timestamps';

export const relatedTaskKey = 'io.modelcontextprotocol/related-task';
export const modelImmediateResponseKey = 'io.modelcontextprotocol/model-immediate-response';

/** The flat Task object of the 2025-11-25 schema. */
export function toTask(row: TaskStatusRow) {
  return {
    taskId: row.id,
    status: row.status,
    ...(row.statusMessage !== null ? { statusMessage: row.statusMessage } : {}),
    createdAt: isoTimestamp(row.createdAt),
    lastUpdatedAt: isoTimestamp(row.lastUpdatedAt),
    ttl: row.ttlMs,
    pollInterval: row.pollIntervalMs,
  };
}

export const relatedTaskMeta = (taskId: string) => ({ [relatedTaskKey]: { taskId } });

/**
 * What tasks/result returns for a terminal task: exactly what tools/call would have returned, with the
 * related-task _meta on a result; a stored JSON-RPC error is thrown to be returned verbatim. A plain
 * call's response gets no related-task _meta (`nameTask` false): its client made no task and, before
 * 2025-11-25, could not even query one.
 */
export function taskResultPayload(row: TaskRow, nameTask = true): Record<string, unknown> {
  if (row.error) throw new RpcError(row.error.code, row.error.message, row.error.data);
  if (row.result) {
    if (!nameTask) return row.result;
    const result = row.result as { _meta?: Record<string, unknown> };
    return { ...result, _meta: { ...result._meta, ...relatedTaskMeta(row.id) } };
  }
  if (row.status === 'cancelled') {
    throw new RpcError(ErrorCode.InternalError, `Task ${row.id} was cancelled: ${row.statusMessage ?? 'no result'}`);
  }
  throw new RpcError(ErrorCode.InternalError, `Task ${row.id} ended ${row.status} without a result`);
}

/** Words the engine's refusals the way the spec's examples do, with -32602. */
export function taskErrorToRpc(error: unknown, action: string): unknown {
  if (!isTaskError(error)) return error;
  if (error.reason === 'terminal') return new RpcError(ErrorCode.InvalidParams, error.message);
  if (error.reason === 'bad_cursor') return new RpcError(ErrorCode.InvalidParams, 'Invalid params: cursor is not valid for this user');
  return new RpcError(ErrorCode.InvalidParams, `${action}: ${error.message}`);
}
