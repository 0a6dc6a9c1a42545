import type { McpSession } from '@/db/queries/sessions';
import type { Caller, McpContext } from '../core/context';
import { ErrorCode, RpcError } from '../core/errors';
import { batchProtocolVersion, classifyMessage, maxBatchMessages, type IncomingMessage } from '../core/schema';
import { countMcpStream } from '../http/caps';
import type { McpHttpRequest, McpReply } from '../http/exchange';
import { emptyReply, jsonReply, rpcErrorBody } from '../http/replies';
import type { RequestFacts } from '../http/request-facts';
import { SseStream } from '../http/sse';
import { inFlight } from '../http/in-flight';
import { closeWhenTokenRevoked } from '../http/token-streams';
import { dispatch, type RequestContext } from './methods';
import { receiveNotification, receiveResponse } from './client-messages';
import { inFlightKey, requireSession, streamReply, toErrorObject } from './sessions';

/**
 * Batches exist only in 2025-03-26, whose servers must accept them; later revisions removed them. The
 * requests of a batch are answered together as one JSON array; once a member must send messages first
 * (a plain call's progress and questions), the answer becomes an SSE stream that carries them and then
 * each response as it is ready. That stream cannot be resumed: clients of 2025-03-26 need not resume.
 */

export async function handleBatch(request: McpHttpRequest, messages: unknown[], ctx: McpContext, caller: Caller, facts: RequestFacts): Promise<McpReply> {
  const session = await requireSession(request, caller.userId, facts);
  if (session.protocolVersion !== batchProtocolVersion) {
    throw new RpcError(ErrorCode.InvalidRequest, 'Invalid Request: batches are not supported; send one JSON-RPC message per POST');
  }
  if (messages.length === 0) throw new RpcError(ErrorCode.InvalidRequest, 'Invalid Request: the batch is empty');
  if (messages.length > maxBatchMessages) {
    throw new RpcError(ErrorCode.InvalidRequest, `Invalid Request: a batch may hold at most ${maxBatchMessages} messages; it has ${messages.length}`);
  }
  let stream: SseStream | undefined;
  let markStreamed = () => {};
  const streamed = new Promise<'streamed'>((resolve) => (markStreamed = () => resolve('streamed')));
  const openStream = () => {
    if (stream) return;
    stream = new SseStream(ctx.heartbeatMs);
    countMcpStream(caller.userId, session.id, stream);
    closeWhenTokenRevoked(stream, caller.tokenId);
    markStreamed();
  };
  const batchStream: BatchStream = {
    open: openStream,
    send: (message) => stream?.send(message),
    isOpen: () => stream !== undefined && !stream.closed,
  };
  const replies = messages.map((value) => answerBatchMember(value, request, ctx, session, caller, batchStream));
  const first = await Promise.race([Promise.all(replies), streamed]);
  if (first !== 'streamed') {
    const responses = first.filter((reply) => reply !== null);
    return responses.length > 0 ? jsonReply(responses) : emptyReply(202);
  }
  const opened = stream!;
  Promise.all(
    replies.map(async (pending) => {
      const reply = await pending;
      if (reply) opened.send(reply);
    }),
  )
    .catch((error: unknown) => console.error('MCP batch: a member failed after the answer became a stream', error))
    .finally(() => opened.close());
  return streamReply(opened);
}

/** The SSE stream a batch's answer becomes, opened by the first member that must send a message. */
interface BatchStream {
  open(): void;
  send(message: Record<string, unknown>): void;
  isOpen(): boolean;
}

/**
 * One member of a batch: a request's response (null for one the client cancelled), an error for a
 * member that is no JSON-RPC message (with "id": null, as JSON-RPC asks when the id cannot be read), or
 * null for a notification or a response taken.
 */
async function answerBatchMember(
  value: unknown,
  request: McpHttpRequest,
  ctx: McpContext,
  session: McpSession,
  caller: Caller,
  stream: BatchStream,
): Promise<Record<string, unknown> | null> {
  let incoming: IncomingMessage;
  try {
    incoming = classifyMessage(value);
  } catch (error) {
    return { ...rpcErrorBody(null, toErrorObject(error, 'batch')), id: null };
  }
  if (incoming.kind === 'notification') {
    await receiveNotification(incoming.message, ctx, session);
    return null;
  }
  if (incoming.kind === 'response') {
    const taken = await receiveResponse(incoming.message, ctx, session, caller);
    return 'json' in taken && taken.json ? { ...(taken.json as Record<string, unknown>), id: null } : null;
  }
  const { id, method, params } = incoming.message;
  if (method === 'initialize') {
    return rpcErrorBody(id, { code: ErrorCode.InvalidRequest, message: 'Invalid Request: initialize must not be part of a batch' });
  }
  const cancel = new AbortController();
  const key = inFlightKey(session.id, id);
  inFlight.set(key, cancel);
  const requestContext: RequestContext = {
    engine: ctx.engine,
    session,
    userId: caller.userId,
    requestId: id,
    signal: AbortSignal.any([cancel.signal, request.signal]),
    heartbeatMs: ctx.heartbeatMs,
    answerWindowOf: ctx.answerWithinMs,
    questionRelaysSettled: (taskId) => ctx.streams.questionRelaysSettled(taskId),
    send: (outgoing) => {
      stream.open();
      stream.send(outgoing);
    },
    openStream: stream.open,
    isStreamRead: stream.isOpen,
  };
  try {
    return { jsonrpc: '2.0', id, result: await dispatch(method, params, requestContext) };
  } catch (error) {
    return cancel.signal.aborted ? null : rpcErrorBody(id, toErrorObject(error, method));
  } finally {
    inFlight.delete(key);
  }
}
