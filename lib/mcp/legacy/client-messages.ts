import type { McpSession } from '@/db/queries/sessions';
import { approvalNotForClients } from '@/lib/tasks/inputs';
import type { Caller, McpContext } from '../core/context';
import { ErrorCode } from '../core/errors';
import type { JsonRpcNotification, JsonRpcResponse } from '../core/schema';
import type { McpReply } from '../http/exchange';
import { emptyReply, jsonReply, rpcErrorBody } from '../http/replies';
import { inFlight } from '../http/in-flight';
import { followClientTask } from './client-task-poller';
import { isLinkAccepted } from '../core/elicitation-modes';
import { canCancelTasks, clientLabel, markCopyAnswered, markLinkAccepted, parseInputRequestId, receivesLink } from './input-requests';
import { inFlightKey } from './sessions';

/** The messages a legacy client sends that are not requests: its answers to our questions, and its notifications. */

/**
 * A client's answer to one of our requests. The first answer to a question wins; a late one is
 * accepted and ignored. An answer that does not fit the question is refused (400) and the question
 * stays open. A client sent the question as a link answers only by declining or cancelling: its accept
 * is consent to open the task's page, where the person answers.
 */

export async function receiveResponse(message: JsonRpcResponse, ctx: McpContext, session: McpSession, caller: Caller): Promise<McpReply> {
  if (ctx.streams.clientRequests.settle(message)) return emptyReply(202);
  const target = parseInputRequestId(message.id);
  if (!target) return emptyReply(202);
  const via = String(message.id);
  const asked = await ctx.engine.inputs.get(target.inputId);
  if (asked?.kind === 'approval' && asked.userId === caller.userId) {
    // Never sent to a client, so nothing a client sends answers it: a person approves in the dashboard.
    return jsonReply(rpcErrorBody(null, { code: ErrorCode.InvalidParams, message: `${approvalNotForClients}: ${ctx.engine.taskPageUrl(asked.taskId)}` }), 400);
  }
  markCopyAnswered(session.id, via);
  const label = clientLabel(session);
  if (!('result' in message)) {
    await ctx.engine.inputs.refuse(target.inputId, caller.userId, message.error, label, via);
    return emptyReply(202);
  }
  const link = receivesLink(session, 'elicitation') && asked?.kind === 'elicitation';
  if (link && isLinkAccepted(message.result)) {
    markLinkAccepted(session.id, target.inputId);
    return emptyReply(202);
  }
  // A link is never sent task-augmented: a task in its result is no answer (and is checked as one below).
  const clientTask = link ? undefined : (message.result as { task?: { taskId?: unknown; pollInterval?: unknown } }).task;
  if (clientTask && typeof clientTask.taskId === 'string') {
    const stream = await ctx.streams.streamOfRequest(session.id, via);
    if (await ctx.engine.inputs.claimForClientTask(target.inputId, caller.userId, clientTask.taskId)) {
      // The client took the question as a task of its own: follow it until it has the answer.
      followClientTask({
        engine: ctx.engine,
        requests: ctx.streams.clientRequests,
        sessionId: session.id,
        userId: caller.userId,
        inputId: target.inputId,
        clientTaskId: clientTask.taskId,
        stream,
        pollIntervalMs: typeof clientTask.pollInterval === 'number' ? clientTask.pollInterval : undefined,
        label,
      }).catch((error: unknown) => console.error(`Following the client's task ${JSON.stringify(clientTask.taskId)} failed`, error));
    } else if (canCancelTasks(session)) {
      // Answered already, or another copy became the client's task first: this one is not needed.
      ctx.streams.clientRequests.send(session.id, 'tasks/cancel', { taskId: clientTask.taskId }, stream).catch(() => {});
    }
    return emptyReply(202);
  }
  const outcome = await ctx.engine.inputs.answer(target.inputId, caller.userId, message.result, 'client', label, via);
  if (!outcome.ok && outcome.reason === 'invalid') {
    return jsonReply(rpcErrorBody(null, { code: ErrorCode.InvalidParams, message: outcome.message, data: { fieldErrors: outcome.fieldErrors } }), 400);
  }
  return emptyReply(202);
}

/**
 * Cancelling a plain tools/call cancels the task it started, even after the client dropped the call's
 * stream; the call itself is stopped first, so that it sends no response. A client that cancels only
 * because its own timeout ran out has decided nothing: its task goes on (the dashboard shows it, and
 * task_result fetches its result). A call answered already ("still running") started no task any more.
 */
export async function receiveNotification(message: JsonRpcNotification, ctx: McpContext, session: McpSession): Promise<void> {
  if (message.method !== 'notifications/cancelled') return;
  const requestId = message.params?.requestId;
  if (typeof requestId === 'string' || typeof requestId === 'number') {
    inFlight.get(inFlightKey(session.id, requestId))?.abort(new DOMException('Cancelled by the client', 'AbortError'));
    await ctx.engine.stopCallTask(session.id, requestId, session.userId, isClientTimeout(message.params?.reason) ? 'client-timeout' : 'cancelled');
  }
}

/** The reason the official SDKs give when a request's own timeout cancels it ("McpError: MCP error -32001: Request timed out"). */
const isClientTimeout = (reason: unknown) => typeof reason === 'string' && /\btimed? ?out\b/i.test(reason);
