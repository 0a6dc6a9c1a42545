import type { McpSession } from '@/db/queries/sessions';
import type { Caller, McpContext } from '../core/context';
import { ErrorCode, HttpError } from '../core/errors';
import { takeMcpStreamPlace } from '../http/caps';
import type { McpHttpRequest, McpReply } from '../http/exchange';
import { accepts, rpcErrorBody } from '../http/replies';
import type { RequestFacts } from '../http/request-facts';
import type { SseStream } from '../http/sse';
import { inFlight } from '../http/in-flight';
import { closeWhenTokenRevoked } from '../http/token-streams';
import { dispatch, earlyAnswerWindow, followCallTask, type RequestContext } from './methods';
import { taskIdOfCallStream, taskIdOfResultStream, type ResumeTarget } from './session-streams';
import { finishResponseStream, inFlightKey, requireSession, streamReply, toErrorObject } from './sessions';

/** The session's GET stream, and the resumption of response streams with Last-Event-ID, after a restart too. */

/**
 * The session's GET stream, or, when Last-Event-ID names an event of a POST response stream, the rest
 * of that stream: what it missed, then what comes, ending with the response.
 */

export async function handleGet(request: McpHttpRequest, ctx: McpContext, caller: Caller, facts: RequestFacts): Promise<McpReply> {
  if (!accepts(request, 'text/event-stream')) {
    throw new HttpError(406, ErrorCode.InvalidRequest, 'Not Acceptable: the Accept header must include text/event-stream');
  }
  const session = await requireSession(request, caller.userId, facts);
  const target = await ctx.streams.resumeTarget(session.id, request.header('last-event-id'));
  if (target.kind === 'unknown') {
    // Never another stream in its place: the client would wait there for messages that never come.
    throw new HttpError(
      400,
      ErrorCode.InvalidRequest,
      'Bad Request: Last-Event-ID names no stream of this session that can be resumed (its messages are gone or it never existed); open the GET stream without it',
    );
  }
  // A reconnecting GET stream replaces the session's older one, which closes at once: no new place.
  const replacing = target.kind === 'session' && ctx.streams.hasGetStream(session.id);
  const place = await takeMcpStreamPlace(caller.userId, session.id, replacing ? 'allow' : 'refuse');
  let stream: SseStream;
  try {
    stream = await openGetStream(ctx, session, caller.userId, target);
  } catch (error) {
    place.release();
    throw error;
  }
  place.holdUntilEnd(stream);
  closeWhenTokenRevoked(stream, caller.tokenId);
  return streamReply(stream);
}

async function openGetStream(
  ctx: McpContext,
  session: McpSession,
  userId: string,
  target: Exclude<ResumeTarget, { kind: 'unknown' }>,
): Promise<SseStream> {
  if (target.kind === 'session') return ctx.streams.open(session, target.cursor);
  const stream = ctx.streams.readResponse(session.id, target.key, target.cursor);
  if (!target.live && !target.ended) {
    // Nothing in this process answers the stream any more (the server restarted): a plain call's
    // task, or a tasks/result wait, is followed again; any other request is gone, and its stream ends.
    const callTaskId = taskIdOfCallStream(target.key);
    const resultTaskId = taskIdOfResultStream(target.key);
    try {
      if (callTaskId) await resumeCall(ctx, session, userId, callTaskId, target.key);
      else if (resultTaskId) await resumeResultWait(ctx, session, userId, resultTaskId, target.key);
      else stream.close();
    } catch (error) {
      stream.close();
      throw error;
    }
  }
  return stream;
}

/** Follows a plain call's task again on its stream, for the client resuming it after a restart. */
async function resumeCall(ctx: McpContext, session: McpSession, userId: string, taskId: string, streamKey: string): Promise<void> {
  let task;
  try {
    task = await ctx.engine.getTask(taskId, userId);
  } catch {
    task = undefined;
  }
  if (!task || task.callRequestId === null) {
    ctx.streams.endResponse(session.id, streamKey);
    return;
  }
  const progressToken = task.progressToken ?? undefined;
  const progressSent = progressToken !== undefined ? await ctx.streams.lastProgressSent(session.id, streamKey, progressToken) : undefined;
  answerAgain(ctx, session, userId, task.callRequestId, streamKey, 'tools/call', (requestContext) =>
    followCallTask(requestContext, taskId, progressToken, progressSent, { withinMs: earlyAnswerWindow(requestContext), release: true }),
  );
}

/** Waits for a task again on a tasks/result stream, for the client resuming it after a restart. */
async function resumeResultWait(ctx: McpContext, session: McpSession, userId: string, taskId: string, streamKey: string): Promise<void> {
  const requestId = await ctx.streams.requestIdOfResponse(session.id, streamKey);
  if (requestId === undefined) {
    ctx.streams.endResponse(session.id, streamKey);
    return;
  }
  answerAgain(ctx, session, userId, requestId, streamKey, 'tasks/result', (requestContext) => dispatch('tasks/result', { taskId }, requestContext));
}

/** Works on a request of a response stream again, in this process, and ends the stream with its response. */
function answerAgain(
  ctx: McpContext,
  session: McpSession,
  userId: string,
  requestId: string | number,
  streamKey: string,
  method: string,
  work: (requestContext: RequestContext) => Promise<Record<string, unknown>>,
): void {
  const cancel = new AbortController();
  const key = inFlightKey(session.id, requestId);
  inFlight.set(key, cancel);
  ctx.streams.reviveResponse(streamKey);
  const requestContext: RequestContext = {
    engine: ctx.engine,
    session,
    userId,
    requestId,
    signal: cancel.signal,
    heartbeatMs: ctx.heartbeatMs,
    answerWindowOf: ctx.answerWithinMs,
    questionRelaysSettled: (taskId) => ctx.streams.questionRelaysSettled(taskId),
    send: (outgoing) => ctx.streams.sendOnResponse(session.id, streamKey, outgoing),
    openStream: () => {},
    isStreamRead: () => ctx.streams.isResponseRead(streamKey),
    disconnect: () => ctx.streams.disconnectResponse(streamKey),
  };
  (async () => {
    let final: Record<string, unknown>;
    try {
      final = { jsonrpc: '2.0', id: requestId, result: await work(requestContext) };
    } catch (error) {
      final = rpcErrorBody(requestId, toErrorObject(error, method));
    } finally {
      inFlight.delete(key);
    }
    finishResponseStream(ctx, session.id, streamKey, cancel.signal, final);
  })().catch((error: unknown) => console.error(`MCP ${JSON.stringify(method)}: ending the resumed response stream failed`, error));
}
