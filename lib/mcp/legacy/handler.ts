import { endMcpSession, type McpSession } from '@/db/queries/sessions';
import type { StorageTrouble } from '@/db/errors';
import { storageTroubleIn } from '@/lib/storage/trouble';
import type { Caller, McpContext } from '../core/context';
import { ErrorCode, HttpError, isHttpError, isRpcError, storageRefusal } from '../core/errors';
import { classifyMessage, initializeParamsSchema, latestProtocolVersion, parseParams, supportedProtocolVersions, tasksProtocolVersion, type JsonRpcRequest } from '../core/schema';
import { serverInfoOf } from '../core/server-info';
import { answersWithStream, countMcpStream, createSessionWithinCap, takeMcpStreamPlace, type StreamPlace } from '../http/caps';
import type { McpHttpRequest, McpReply } from '../http/exchange';
import { emptyReply, httpErrorReply, jsonReply, rpcErrorBody } from '../http/replies';
import type { RequestFacts } from '../http/request-facts';
import { SseStream } from '../http/sse';
import { inFlight, LazyAbort } from '../http/in-flight';
import { closeWhenTokenRevoked } from '../http/token-streams';
import { answersAtOnce, dispatch, serverCapabilities, type RequestContext } from './methods';
import { handleBatch } from './batches';
import { receiveNotification, receiveResponse } from './client-messages';
import { handleGet } from './get-streams';
import { finishResponseStream, inFlightKey, requireSession, stopSessionWork, streamReply, toErrorObject } from './sessions';

const versionHeader = 'mcp-protocol-version';

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

export async function initialize(message: JsonRpcRequest, ctx: McpContext, userId: string, facts: RequestFacts): Promise<McpReply> {
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
        serverInfo: serverInfoOf(ctx.serverVersion, ctx.appUrl),
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
 * What a method handler gets besides its params. A class, not an object literal: V8 gives each literal
 * with a getter of its own a hidden class of its own, made where only a full collection frees it, and a
 * request's signal must stay a getter (it is made only when read, LazyAbort).
 */
class LegacyRequest implements RequestContext {
  readonly engine: RequestContext['engine'];
  readonly userId: string;
  readonly heartbeatMs: number;
  readonly answerWindowOf: RequestContext['answerWindowOf'];
  readonly questionRelaysSettled: RequestContext['questionRelaysSettled'];
  readonly send: RequestContext['send'];
  readonly openStream: RequestContext['openStream'];
  readonly isStreamRead: RequestContext['isStreamRead'];
  readonly disconnect: RequestContext['disconnect'];

  constructor(
    ctx: McpContext,
    readonly session: McpSession,
    caller: Caller,
    readonly requestId: string | number,
    private readonly cancel: LazyAbort,
    outlet: Pick<RequestContext, 'questionRelaysSettled' | 'send' | 'openStream' | 'isStreamRead' | 'disconnect'>,
  ) {
    this.engine = ctx.engine;
    this.userId = caller.userId;
    this.heartbeatMs = ctx.heartbeatMs;
    this.answerWindowOf = ctx.answerWithinMs;
    this.questionRelaysSettled = outlet.questionRelaysSettled;
    this.send = outlet.send;
    this.openStream = outlet.openStream;
    this.isStreamRead = outlet.isStreamRead;
    this.disconnect = outlet.disconnect;
  }

  get signal(): AbortSignal {
    return this.cancel.signal;
  }
}

/**
 * What a method that answers at once gets instead of a stream: nothing it may call. A method marked so
 * that reaches for a stream fails loudly rather than losing what it sent.
 */
const noStream: Pick<RequestContext, 'questionRelaysSettled' | 'send' | 'openStream' | 'isStreamRead' | 'disconnect'> = {
  questionRelaysSettled: () => Promise.reject(new Error('A method that answers at once has no questions to relay')),
  send: () => {
    throw new Error('A method that answers at once cannot send messages');
  },
  openStream: () => {
    throw new Error('A method that answers at once cannot open a stream');
  },
  isStreamRead: () => false,
  disconnect: () => {},
};

/**
 * A method that answers with its result alone (tasks/get, tools/list, ping…): no stream to foresee, no
 * place at the stream cap, nothing for a cancellation to withhold. It takes milliseconds at most, and a
 * notifications/cancelled that arrives meanwhile finds it answered, as one arriving just after would.
 */
async function answerAtOnce(message: JsonRpcRequest, ctx: McpContext, session: McpSession, caller: Caller): Promise<McpReply> {
  const requestContext = new LegacyRequest(ctx, session, caller, message.id, new LazyAbort(), noStream);
  try {
    return jsonReply({ jsonrpc: '2.0', id: message.id, result: await dispatch(message.method, message.params, requestContext) });
  } catch (error) {
    const trouble = storageTroubleIn(error);
    // Storage trouble is said with the status a client retries on.
    if (trouble) return httpErrorReply(storageRefusal(trouble), message.id);
    return jsonReply(rpcErrorBody(message.id, toErrorObject(error, message.method)));
  }
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
  if (answersAtOnce(message.method)) return answerAtOnce(message, ctx, session, caller);
  let streamPlace: StreamPlace | undefined;
  if (await answersWithStream(message, session, ctx.engine, caller.userId)) {
    try {
      streamPlace = await takeMcpStreamPlace(caller.userId, session.id);
    } catch (error) {
      if (isHttpError(error)) return httpErrorReply(error, message.id);
      throw error;
    }
  }
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
  const cancel = new LazyAbort({ onAbort: () => openStream() });
  const key = inFlightKey(session.id, message.id);
  inFlight.set(key, cancel);
  const requestContext = new LegacyRequest(ctx, session, caller, message.id, cancel, {
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
  });

  let trouble: StorageTrouble | undefined;
  const reply = (async () => {
    try {
      return { jsonrpc: '2.0', id: message.id, result: await dispatch(message.method, message.params, requestContext) };
    } catch (error) {
      trouble = storageTroubleIn(error);
      return rpcErrorBody(message.id, toErrorObject(error, message.method));
    } finally {
      inFlight.delete(key);
    }
  })();

  const first = await Promise.race([reply, streamed]);
  if (first !== 'streamed') {
    streamPlace?.release();
    // Not yet a stream: storage trouble is said with the status a client retries on.
    if (trouble) return httpErrorReply(storageRefusal(trouble), message.id);
    return jsonReply(first);
  }
  reply
    .then((final) => finishResponseStream(ctx, session.id, streamKey, cancel.signal, final))
    .catch((error: unknown) => console.error(`MCP ${JSON.stringify(message.method)}: ending the response stream failed`, error));
  return streamReply(stream!);
}

async function handleDelete(request: McpHttpRequest, ctx: McpContext, userId: string, facts: RequestFacts): Promise<McpReply> {
  const session = await requireSession(request, userId, facts);
  await endMcpSession(session.id, userId);
  stopSessionWork(ctx, session.id);
  return emptyReply(200);
}
