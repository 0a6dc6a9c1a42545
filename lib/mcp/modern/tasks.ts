import { z } from 'zod';
import { isTaskError } from '@/lib/tasks/engine';
import { parseParams } from '../core/schema';
import { taskErrorToRpc } from '../core/task-messages';
import type { ModernCall, ModernMethod } from './call';
import { answerInputResponses, inputResponsesSchema } from './inputs';
import { declaresTasks, tasksExtensionRequired } from './protocol';
import { toDetailedTask } from './task-view';

/**
 * The methods of the tasks extension (io.modelcontextprotocol/tasks): tasks/get, tasks/update and
 * tasks/cancel. Each is only for a request that declares the extension (-32021 otherwise), and each
 * finds only the caller's own tasks: another user's task is reported exactly like one that does not
 * exist. There is no tasks/list: no caller can learn of a task it was not given.
 */

const taskIdSchema = z.object({ taskId: z.string().min(1).max(256) });
const updateSchema = taskIdSchema.extend({ inputResponses: inputResponsesSchema });

function requireExtension(call: ModernCall, method: string): void {
  if (!declaresTasks(call.client)) throw tasksExtensionRequired(method);
}

/** The caller's task with what its status carries inline, as tasks/get and notifications/tasks give it. */
export async function detailedTaskFor(call: Pick<ModernCall, 'engine' | 'client'>, taskId: string, userId: string): Promise<Record<string, unknown>> {
  const row = await call.engine.getTask(taskId, userId);
  const inputs = row.status === 'input_required' ? await call.engine.inputs.listForTask(taskId) : [];
  return toDetailedTask(row, inputs, call.client, call.engine.taskPageUrl(row.id));
}

export const getTask: ModernMethod = async (rawParams, call) => {
  requireExtension(call, 'tasks/get');
  const { taskId } = parseParams(taskIdSchema, rawParams);
  try {
    return await detailedTaskFor(call, taskId, call.userId);
  } catch (error) {
    throw taskErrorToRpc(error, 'Failed to retrieve task');
  }
};

export const updateTask: ModernMethod = async (rawParams, call) => {
  requireExtension(call, 'tasks/update');
  const { taskId, inputResponses } = parseParams(updateSchema, rawParams);
  try {
    await call.engine.getTask(taskId, call.userId);
  } catch (error) {
    throw taskErrorToRpc(error, 'Failed to update task');
  }
  // A link the client accepted is no answer; the person answers on the task's page, and tasks/get says when.
  await answerInputResponses(call.engine, taskId, call.userId, inputResponses, call.client);
  return {};
};

export const cancelTask: ModernMethod = async (rawParams, call) => {
  requireExtension(call, 'tasks/cancel');
  const { taskId } = parseParams(taskIdSchema, rawParams);
  try {
    await call.engine.cancelTask(taskId, call.userId, 'client');
  } catch (error) {
    // Cancelling a task that has ended is acknowledged like any other: cancellation is a request, not a promise.
    if (!(isTaskError(error) && error.reason === 'terminal')) throw taskErrorToRpc(error, 'Failed to cancel task');
  }
  return {};
};
