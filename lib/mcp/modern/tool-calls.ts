import { z } from 'zod';
import { catalogueVariesByUser, findToolFor, toolsFor } from '@/lib/tools/catalogue';
import { describeTool, logLevels, type CallToolResult, type LogLevel } from '@/lib/tools/define';
import { isTerminal } from '@/lib/tasks/states';
import { topics } from '@/lib/tasks/bus';
import type { TaskRow } from '@/lib/tasks/engine';
import { ErrorCode, RpcError } from '../core/errors';
import { sharedListings } from '../core/json-text';
import { parseParams, requireNoCursor } from '../core/schema';
import { taskErrorToRpc, taskResultPayload } from '../core/task-messages';
import { describeTaskTools, runTaskTool, stillRunningResult, taskToolNames, type FollowTask } from '../core/long-calls';
import { createTaskOrRefuse, LogRelay, ProgressRelay, runToolNow } from '../core/tool-calls';
import { shuttingDown } from '../http/in-flight';
import type { ModernCall, ModernMethod } from './call';
import { answerInputResponses, inputResponsesSchema } from './inputs';
import { canBeAsked, capabilityRequired, declaresTasks, tasksExtensionRequired, type ModernClient } from './protocol';
import { openRequestState, sealRequestState, type CallBinding, type RoundState } from './request-state';
import { inputRequestsFor, toModernTask } from './task-view';

/**
 * tools/list and tools/call in the 2026-07-28 era. A tool that can run as a task always runs as one,
 * durable and in the dashboard, whatever the client can do:
 * - a request that declares the tasks extension gets the task itself (CreateTaskResult, once committed);
 * - any other request waits for the task, in rounds: the result when it ends in time, or an
 *   InputRequiredResult with the task's open questions (those the client can be asked, or links to the
 *   task's page for a client that takes only URL-mode elicitation) and a sealed requestState naming the
 *   task; the retry answers them and waits again. Retries never start another task.
 */

/** How long a client may keep the catalogue: the same for every client, and for every person unless a server of the servers file admits only some. */
export const toolsListTtlMs = 5 * 60 * 1000;

export const listTools: ModernMethod = async (rawParams, call) => {
  requireNoCursor(rawParams, 'tools/list');
  const tools = (await toolsFor(call.userId)).map((tool) => describeTool(tool, false));
  // A request without the tasks extension gets the tools that fetch a task's result, as a legacy client without tasks does.
  const listed = declaresTasks(call.client) ? tools : [...tools, ...describeTaskTools(call.roundWaitMs)];
  return { tools: sharedListings(listed), ttlMs: toolsListTtlMs, cacheScope: catalogueVariesByUser() ? 'private' : 'public' };
};

const callParamsSchema = z.object({
  name: z.string().min(1),
  arguments: z.record(z.string(), z.unknown()).optional(),
  inputResponses: inputResponsesSchema.optional(),
  requestState: z.string().optional(),
});

export const callTool: ModernMethod = async (rawParams, call) => {
  const params = parseParams(callParamsSchema, rawParams);
  if (taskToolNames.has(params.name) && params.requestState === undefined) return callTaskTool(params.name, params.arguments ?? {}, call);
  const tool = await findToolFor(params.name, call.userId);
  if (!tool) throw new RpcError(ErrorCode.InvalidParams, `Unknown tool: ${params.name}`);
  if (tool.requiresClient && !canBeAsked(call.client, tool.requiresClient)) throw capabilityRequired(tool.requiresClient, `Tool ${tool.name}`);
  const args = params.arguments ?? {};
  const binding: CallBinding = { userId: call.userId, method: 'tools/call', name: tool.name, arguments: args };
  // State is checked before anything else: a forged or foreign one must not reach any tool.
  const state = params.requestState !== undefined ? await openRequestState(params.requestState, binding) : undefined;
  const stateTaskId = state?.taskId;

  if (stateTaskId === undefined && tool.taskSupport === 'forbidden') {
    return runToolNow(tool, args, {
      userId: call.userId,
      signal: call.signal,
      progressToken: call.client.progressToken,
      send: call.send,
      logAllows: (level) => logs(call.client, level),
      closeStream: () => {},
    });
  }
  const newTask = {
    userId: call.userId,
    sessionId: null,
    client: { name: call.client.name, version: call.client.version },
    protocolVersion: call.client.protocolVersion,
    tool,
    args,
    progressToken: call.client.progressToken,
  };
  // The tasks extension: the task itself is the answer (once the questions a tool asks first are answered).
  const handOut = declaresTasks(call.client);
  if (stateTaskId === undefined && handOut && !tool.asksBeforeTask) {
    const row = await createTaskOrRefuse(call.engine, newTask);
    return { resultType: 'task', ...toModernTask(row) };
  }
  if (stateTaskId === undefined && !handOut && tool.taskSupport === 'required') throw tasksExtensionRequired(`Tool ${tool.name}`);

  // From here the request waits for its task: it holds a stream's place, or is refused before any task starts.
  await call.holdStreamPlace();
  let taskId: string;
  if (stateTaskId !== undefined) {
    try {
      taskId = (await call.engine.getTaskStatus(stateTaskId, call.userId)).id;
    } catch (error) {
      throw taskErrorToRpc(error, 'The task of this requestState is gone');
    }
  } else {
    // A plain call's task answers this request; one a client of the extension will be handed is its own.
    taskId = (await createTaskOrRefuse(call.engine, handOut ? newTask : { ...newTask, callRequestId: call.requestId })).id;
  }
  return waitForRound(call, taskId, binding, {
    first: stateTaskId === undefined,
    responses: params.inputResponses ?? {},
    linksAccepted: new Set(state?.linksAccepted),
    handOut,
  });
};

/**
 * task_result and the other tools for clients without tasks. A plain call of this era is answered in
 * rounds and never "still running", but a task's id may reach a model otherwise (task_list, the
 * dashboard): task_result waits for it one round at most; its questions are asked on the task's page.
 */
async function callTaskTool(name: string, args: Record<string, unknown>, call: ModernCall): Promise<Record<string, unknown>> {
  const follow: FollowTask = async (task, withinMs) => {
    if (isTerminal(task.status)) return taskResultPayload(task, false) as unknown as CallToolResult;
    await call.holdStreamPlace();
    const windowClosed = AbortSignal.timeout(withinMs);
    try {
      return taskResultPayload(await call.engine.waitForTerminal(task.id, call.userId, AbortSignal.any([call.signal, windowClosed])), false) as unknown as CallToolResult;
    } catch (error) {
      if (!windowClosed.aborted || call.signal.aborted) throw taskErrorToRpc(error, 'Failed to follow the task');
      const now = await call.engine.getTask(task.id, call.userId);
      if (isTerminal(now.status)) return taskResultPayload(now, false) as unknown as CallToolResult;
      return stillRunningResult(now, call.engine.taskPageUrl(task.id), withinMs);
    }
  };
  return runTaskTool(name, args, { engine: call.engine, windowMs: call.roundWaitMs, follow }, {
    userId: call.userId,
    signal: call.signal,
    progressToken: undefined,
    send: call.send,
    logAllows: (level) => logs(call.client, level),
    closeStream: () => {},
  });
}

/** Only a request that named a level gets log messages, and only those at or above it. */
const logs = (client: ModernClient, level: LogLevel) => client.logLevel !== undefined && logLevels.indexOf(level) >= logLevels.indexOf(client.logLevel);

/** Ends a wait for the task: it needs an answer this client can give, or (tasks extension) it can be handed out. */
class RoundOver {
  constructor(readonly inputRequests?: Record<string, unknown>) {}
}

/**
 * Waits for the task of a call until it ends, needs input this client can give, or the round's time is
 * up, carrying its progress and log messages on the response stream meanwhile. The answers the request
 * brought (`responses`) are given to the task's questions as they are asked, key by key, each once;
 * keys no question has are ignored. A link to the task's page the client accepts is no answer: the
 * round waits for the person to answer on the page, and the state remembers the link (`linksAccepted`),
 * so that no later round sends it again. With `handOut` (a client of the tasks extension, for a tool that
 * asks first) the round ends with the task itself once its first questions are answered.
 */
async function waitForRound(
  call: ModernCall,
  taskId: string,
  binding: CallBinding,
  round: { first: boolean; responses: Record<string, Record<string, unknown>>; linksAccepted: Set<string>; handOut: boolean },
): Promise<Record<string, unknown>> {
  const roundOver = AbortSignal.timeout(call.roundWaitMs);
  const unanswered = new Map(Object.entries(round.responses));
  let answeredAny = false;
  // A client that asked for progress gets it, and heartbeats while the task is quiet, on a stream opened now.
  if (call.client.progressToken !== undefined) call.openStream();
  const progress = call.client.progressToken !== undefined ? new ProgressRelay(call, call.client.progressToken, undefined) : undefined;
  const logRelay = new LogRelay(call.send, (level) => logs(call.client, level));
  const stopFollowingLogs = call.engine.bus.subscribe(topics.task(taskId), (event) => {
    if (event.type === 'task-log') logRelay.log(event.level, event.data, event.logger);
  });
  const handle = async () => ({ resultType: 'task', ...toModernTask(await call.engine.getTask(taskId, call.userId)) });
  // Only the links of questions still open are worth remembering.
  const seal = async (): Promise<string> => {
    const state: RoundState = { taskId, linksAccepted: [] };
    if (round.linksAccepted.size > 0) {
      const open = new Set((await call.engine.inputs.listForTask(taskId)).filter((input) => input.status === 'pending').map((input) => input.key));
      state.linksAccepted = [...round.linksAccepted].filter((key) => open.has(key));
    }
    return sealRequestState(binding, state);
  };
  try {
    const row = await call.engine.waitForTerminal(
      taskId,
      call.userId,
      AbortSignal.any([call.signal, roundOver]),
      async (task) => {
        progress?.sync(task);
        if (task.status !== 'input_required') {
          if (round.handOut && answeredAny) throw new RoundOver();
          return;
        }
        const inputs = await call.engine.inputs.listForTask(taskId);
        const answerable = inputs.filter((input) => input.status === 'pending' && unanswered.has(input.key));
        if (answerable.length > 0) {
          const responses = Object.fromEntries(answerable.map((input) => [input.key, unanswered.get(input.key)!]));
          for (const input of answerable) unanswered.delete(input.key);
          const linksAccepted = await answerInputResponses(call.engine, taskId, call.userId, responses, call.client);
          for (const key of linksAccepted) round.linksAccepted.add(key);
          answeredAny = true;
          // The task moves on (or still waits for other questions): the next wake says which. Links
          // accepted move nothing: the questions left are asked now.
          if (linksAccepted.length < answerable.length) return;
        }
        const asks = inputRequestsFor(inputs, call.client, call.engine.taskPageUrl(taskId), round.linksAccepted);
        if (Object.keys(asks).length > 0) throw new RoundOver(asks);
      },
      progress && ((task) => progress.sync(task)),
    );
    await logRelay.sent();
    return round.handOut ? await handle() : taskResultPayload(row, false);
  } catch (error) {
    if (error instanceof RoundOver) {
      if (!error.inputRequests) return await handle();
      return { resultType: 'input_required', inputRequests: error.inputRequests, requestState: await seal() };
    }
    if (roundOver.aborted && !call.signal.aborted) {
      if (round.handOut) return await handle();
      // Still working (or waiting for a person in the dashboard): the retry with this state waits again.
      return { resultType: 'input_required', requestState: await seal() };
    }
    if (call.signal.aborted && call.signal.reason !== shuttingDown && round.first) {
      // The client closed the only request that knew the task: that is its cancellation (nothing else holds the task).
      await call.engine.cancelTask(taskId, call.userId, 'client').catch(() => {});
    }
    throw taskErrorToRpc(error, 'Failed to follow the task of this call');
  } finally {
    stopFollowingLogs();
    progress?.stop();
  }
}
