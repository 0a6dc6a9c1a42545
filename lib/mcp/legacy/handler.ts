import { endMcpSession, getMcpSessionById, touchMcpSession, type McpSession } from '@/db/queries/sessions';
import { isDatabaseUnavailable } from '@/db/errors';
import { databaseUnavailable, ErrorCode, HttpError, isHttpError, isRpcError, RpcError, type JsonRpcErrorObject } from '../core/errors';
import {
  batchProtocolVersion,
  classifyMessage,
  initializeParamsSchema,
  latestProtocolVersion,
  maxBatchMessages,
  parseParams,
  supportedProtocolVersions,
  tasksProtocolVersion,
  type IncomingMessage,
  type JsonRpcNotification,
  type JsonRpcRequest,
  type JsonRpcResponse,
} from '../core/schema';
import { answersWithStream, countMcpStream, createSessionWithinCap, takeMcpStreamPlace, type StreamPlace } from '../http/caps';
import type { Caller, McpContext } from '../http/endpoint';
import type { McpHttpRequest, McpReply } from '../http/exchange';
import { accepts, emptyReply, httpErrorReply, jsonReply, rpcErrorBody } from '../http/replies';
import type { RequestFacts } from '../http/request-facts';
import { SseStream } from '../http/sse';
import { inFlight, shuttingDown } from '../http/in-flight';
import { closeWhenTokenRevoked } from '../http/token-streams';
import { followClientTask } from './client-task-poller';
import { canCancelTasks, clientLabel, forgetAnsweredCopies, markCopyAnswered, parseInputRequestId } from './input-requests';
import { dispatch, followCallTask, serverCapabilities, type RequestContext } from './methods';
import { taskIdOfCallStream, taskIdOfResultStream, type ResumeTarget } from './session-streams';

const sessionHeader = 'mcp-session-id';
const versionHeader = 'mcp-protocol-version';
/** How often a session's last use is written: idle expiry needs minutes, not milliseconds. */
const sessionTouchMs = 60_000;

/**
 * What a response stream's request leaves behind once done: its response; the end of the stream when
 * the client cancelled it; or nothing when the server is stopping, so that a plain call's stream can be
 * resumed (and followed again) after the restart.
 */
function finishResponseStream(ctx: McpContext, sessionId: string, streamKey: string, signal: AbortSignal, final: Record<string, unknown>): void {
  if (signal.reason === shuttingDown) return;
  ctx.streams.endResponse(sessionId, streamKey, signal.aborted ? undefined : final);
}
const inFlightKey = (sessionId: string, id: string | number) => `${sessionId}\u0000${typeof id}:${id}`;

/**
 * The legacy era (2025-11-25 and earlier): `initialize` opens a session, every later request names it
 * with Mcp-Session-Id, and the session has a GET stream whose events can be replayed.
 */
export async function handleLegacy(request: McpHttpRequest, posted: unknown, ctx: McpContext, caller: Caller, facts: RequestFacts): Promise<McpReply> {
  requireSupportedVersionHeader(request);
  switch (request.method) {
    case 'POST':
      return await handlePost(posted, request, ctx, caller, facts);
    case 'GET':
      return await handleGet(request, ctx, caller, facts);
    case 'DELETE':
      return await handleDelete(request, ctx, caller.userId, facts);
    default:
      throw new HttpError(405, ErrorCode.InvalidRequest, `Method Not Allowed: use POST, GET or DELETE`, {
        Allow: 'GET, POST, DELETE',
      });
  }
}

function requireSupportedVersionHeader(request: McpHttpRequest): void {
  const version = request.header(versionHeader);
  if (version !== null && !(supportedProtocolVersions as readonly string[]).includes(version)) {
    throw new HttpError(
      400,
      ErrorCode.InvalidRequest,
      `Bad Request: unsupported MCP-Protocol-Version ${version}; supported: ${supportedProtocolVersions.join(', ')}`,
    );
  }
}

/** Resolves with the caller's live session named by Mcp-Session-Id: 400 without one, 404 for any other. */
async function requireSession(request: McpHttpRequest, userId: string, facts: RequestFacts): Promise<McpSession> {
  const sessionId = request.header(sessionHeader);
  if (!sessionId) {
    throw new HttpError(400, ErrorCode.InvalidRequest, 'Bad Request: Mcp-Session-Id header is required; call initialize first');
  }
  const session = await getMcpSessionById(sessionId);
  if (!session || session.userId !== userId || session.endedAt !== null) {
    throw new HttpError(404, ErrorCode.InvalidRequest, 'Session not found: it has ended or never existed; initialize a new one');
  }
  const now = Date.now();
  if (now - session.lastSeenAt >= sessionTouchMs) await touchMcpSession(session.id, now);
  facts.session = session;
  return session;
}

async function handlePost(parsed: unknown, request: McpHttpRequest, ctx: McpContext, caller: Caller, facts: RequestFacts): Promise<McpReply> {
  if (Array.isArray(parsed)) return handleBatch(request, parsed, ctx, caller, facts);
  const incoming = classifyMessage(parsed);

  if (incoming.kind === 'request' && incoming.message.method === 'initialize') {
    return initialize(incoming.message, ctx, caller.userId, facts);
  }
  const session = await requireSession(request, caller.userId, facts);
  if (incoming.kind === 'notification') {
    await receiveNotification(incoming.message, ctx, session);
    return emptyReply(202);
  }
  if (incoming.kind === 'response') return receiveResponse(incoming.message, ctx, session, caller);
  return respond(incoming.message, ctx, session, caller);
}

/**
 * A client's answer to one of our requests. The first answer to a question wins; a late one is
 * accepted and ignored. An answer that does not fit the question is refused (400) and the question
 * stays open.
 */
async function receiveResponse(message: JsonRpcResponse, ctx: McpContext, session: McpSession, caller: Caller): Promise<McpReply> {
  if (ctx.streams.clientRequests.settle(message)) return emptyReply(202);
  const target = parseInputRequestId(message.id);
  if (!target) return emptyReply(202);
  const via = String(message.id);
  markCopyAnswered(session.id, via);
  const label = clientLabel(session);
  if (!('result' in message)) {
    await ctx.engine.inputs.refuse(target.inputId, caller.userId, message.error, label, via);
    return emptyReply(202);
  }
  const clientTask = (message.result as { task?: { taskId?: unknown; pollInterval?: unknown } }).task;
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
 * stream; the call itself is stopped first, so that it sends no response.
 */
async function receiveNotification(message: JsonRpcNotification, ctx: McpContext, session: McpSession): Promise<void> {
  if (message.method !== 'notifications/cancelled') return;
  const requestId = message.params?.requestId;
  if (typeof requestId === 'string' || typeof requestId === 'number') {
    inFlight.get(inFlightKey(session.id, requestId))?.abort(new DOMException('Cancelled by the client', 'AbortError'));
    await ctx.engine.cancelCallTask(session.id, requestId, session.userId);
  }
}

/**
 * Batches exist only in 2025-03-26, whose servers must accept them; later revisions removed them. The
 * requests of a batch are answered together as one JSON array; once a member must send messages first
 * (a plain call's progress and questions), the answer becomes an SSE stream that carries them and then
 * each response as it is ready. That stream cannot be resumed: clients of 2025-03-26 need not resume.
 */
async function handleBatch(request: McpHttpRequest, messages: unknown[], ctx: McpContext, caller: Caller, facts: RequestFacts): Promise<McpReply> {
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

async function initialize(message: JsonRpcRequest, ctx: McpContext, userId: string, facts: RequestFacts): Promise<McpReply> {
  let params;
  try {
    params = parseParams(initializeParamsSchema, message.params);
  } catch (error) {
    if (!isRpcError(error)) throw error;
    return jsonReply(rpcErrorBody(message.id, error.toJson()), 200);
  }
  const protocolVersion = (supportedProtocolVersions as readonly string[]).includes(params.protocolVersion)
    ? params.protocolVersion
    : latestProtocolVersion;
  let opened: Awaited<ReturnType<typeof createSessionWithinCap>>;
  try {
    opened = await createSessionWithinCap(
      {
        id: crypto.randomUUID(),
        userId,
        protocolVersion,
        clientName: params.clientInfo.name,
        clientVersion: params.clientInfo.version,
        clientCapabilities: params.capabilities,
      },
      () => ctx.streams.openSessionIds(),
    );
  } catch (error) {
    if (isHttpError(error)) return httpErrorReply(error, message.id);
    throw error;
  }
  for (const sessionId of opened.ended) stopSessionWork(ctx, sessionId);
  const session = opened.session;
  facts.session = session;
  return jsonReply(
    {
      jsonrpc: '2.0',
      id: message.id,
      result: {
        protocolVersion,
        capabilities: serverCapabilities(protocolVersion),
        serverInfo: { name: 'mcp-task-server', title: 'MCP Task Server', version: ctx.serverVersion },
        instructions: instructionsFor(protocolVersion),
      },
    },
    200,
    { 'Mcp-Session-Id': session.id },
  );
}

/** What initialize tells a client: how to start tasks only to a protocol version that has them. */
function instructionsFor(protocolVersion: string): string {
  const plainCall = 'it waits for the result, streaming progress and questions, and the work shows in the dashboard.';
  if (protocolVersion !== tasksProtocolVersion) return `Long-running tools run on the server while a call waits: ${plainCall}`;
  return (
    'Long-running tools run as tasks: call them with "task": {}, poll tasks/get, and fetch the outcome with tasks/result. ' +
    `A plain call works too: ${plainCall}`
  );
}

/**
 * Answers one request: as JSON when the result is all there is, or as an SSE stream once the method
 * must send messages first or wait long (then the result is the stream's last event). The stream's
 * events have ids and go through the session's outbox, so a client that loses the stream resumes it
 * with Last-Event-ID; losing it cancels nothing. A request the client cancels gets no response at all.
 */
async function respond(
  message: JsonRpcRequest,
  ctx: McpContext,
  session: McpSession,
  caller: Caller,
): Promise<McpReply> {
  let streamPlace: StreamPlace | undefined;
  if (await answersWithStream(message, session, ctx.engine, caller.userId)) {
    try {
      streamPlace = await takeMcpStreamPlace(caller.userId, session.id);
    } catch (error) {
      if (isHttpError(error)) return httpErrorReply(error, message.id);
      throw error;
    }
  }
  const cancel = new AbortController();
  const key = inFlightKey(session.id, message.id);
  inFlight.set(key, cancel);
  let stream: SseStream | undefined;
  let streamKey = '';
  let markStreamed = () => {};
  const streamed = new Promise<'streamed'>((resolve) => (markStreamed = () => resolve('streamed')));
  const openStream = (resumableAs?: string) => {
    if (!stream) {
      streamKey = resumableAs ?? `post:${crypto.randomUUID()}`;
      stream = ctx.streams.openResponse(session, streamKey, message.id);
      // A stream no one could foresee (a quick tool's progress, a cancelled request) is counted all the same.
      if (streamPlace) streamPlace.holdUntilEnd(stream);
      else countMcpStream(caller.userId, session.id, stream);
      closeWhenTokenRevoked(stream, caller.tokenId);
      markStreamed();
    }
  };
  // Without a response to send, the HTTP exchange still has to end: as an empty, closed stream.
  cancel.signal.addEventListener('abort', () => openStream(), { once: true });
  const requestContext: RequestContext = {
    engine: ctx.engine,
    session,
    userId: caller.userId,
    requestId: message.id,
    signal: cancel.signal,
    heartbeatMs: ctx.heartbeatMs,
    questionRelaysSettled: (taskId) => ctx.streams.questionRelaysSettled(taskId),
    send: (outgoing) => {
      openStream();
      ctx.streams.sendOnResponse(session.id, streamKey, outgoing);
    },
    openStream,
    isStreamRead: () => stream !== undefined && ctx.streams.isResponseRead(streamKey),
    disconnect: () => {
      if (stream) ctx.streams.disconnectResponse(streamKey);
    },
  };

  let databaseAway = false;
  const reply = (async () => {
    try {
      return { jsonrpc: '2.0', id: message.id, result: await dispatch(message.method, message.params, requestContext) };
    } catch (error) {
      databaseAway = isDatabaseUnavailable(error);
      return rpcErrorBody(message.id, toErrorObject(error, message.method));
    } finally {
      inFlight.delete(key);
    }
  })();

  const first = await Promise.race([reply, streamed]);
  if (first !== 'streamed') {
    streamPlace?.release();
    // Not yet a stream: the database's absence is said with the status a client retries on.
    if (databaseAway) return httpErrorReply(databaseUnavailable(), message.id);
    return jsonReply(first);
  }
  reply
    .then((final) => finishResponseStream(ctx, session.id, streamKey, cancel.signal, final))
    .catch((error: unknown) => console.error(`MCP ${JSON.stringify(message.method)}: ending the response stream failed`, error));
  return streamReply(stream!);
}

function toErrorObject(error: unknown, method: string): JsonRpcErrorObject {
  if (isRpcError(error)) return error.toJson();
  if ((error instanceof Error || error instanceof DOMException) && error.name === 'AbortError') {
    return { code: ErrorCode.InternalError, message: `Request ${method} was cancelled` };
  }
  if (isDatabaseUnavailable(error)) {
    const unavailable = databaseUnavailable();
    return { code: unavailable.rpcCode, message: unavailable.message, data: unavailable.data };
  }
  // The method is the client's text: quoted and escaped, it cannot forge a log line.
  console.error(`MCP ${JSON.stringify(method)}: unexpected error`, error);
  return { code: ErrorCode.InternalError, message: `Internal error while handling ${method}` };
}

/**
 * The session's GET stream, or, when Last-Event-ID names an event of a POST response stream, the rest
 * of that stream: what it missed, then what comes, ending with the response.
 */
async function handleGet(request: McpHttpRequest, ctx: McpContext, caller: Caller, facts: RequestFacts): Promise<McpReply> {
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

const streamReply = (stream: SseStream): McpReply => ({ status: 200, headers: {}, stream });

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
    followCallTask(requestContext, taskId, progressToken, progressSent),
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

async function handleDelete(request: McpHttpRequest, ctx: McpContext, userId: string, facts: RequestFacts): Promise<McpReply> {
  const session = await requireSession(request, userId, facts);
  await endMcpSession(session.id, userId);
  stopSessionWork(ctx, session.id);
  return emptyReply(200);
}

/** An ended session's stream closes and its requests in flight stop. */
function stopSessionWork(ctx: McpContext, sessionId: string): void {
  ctx.streams.close(sessionId);
  forgetAnsweredCopies(sessionId);
  for (const [key, controller] of inFlight) {
    if (key.startsWith(`${sessionId}\u0000`)) controller.abort(new Error('Session ended'));
  }
}
