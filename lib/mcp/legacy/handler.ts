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
import type { SseStream } from '../http/sse';
import { inFlight, LazyAbort } from '../http/in-flight';
import type { StopSignal } from '@/lib/tasks/wait';
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
 * What a method that answers at once (tasks/get, tools/list, ping…) gets besides its params: no stream
 * to foresee, no place at the stream cap, nothing for a cancellation to withhold; a method marked so
 * that reaches for a stream fails loudly rather than losing what it sent. A class, not an object
 * literal: V8 gives each literal with a getter of its own a hidden class of its own, made where only a
 * full collection frees it, and a request's signal must stay a getter (it is made only when read,
 * LazyAbort).
 */
class LegacyRequest implements RequestContext {
  readonly engine: RequestContext['engine'];
  readonly userId: string;
  readonly heartbeatMs: number;
  readonly answerWindowOf: RequestContext['answerWindowOf'];
  protected readonly cancel: LazyAbort;

  constructor(
    protected readonly ctx: McpContext,
    readonly session: McpSession,
    protected readonly caller: Caller,
    readonly requestId: string | number,
  ) {
    this.engine = ctx.engine;
    this.userId = caller.userId;
    this.heartbeatMs = ctx.heartbeatMs;
    this.answerWindowOf = ctx.answerWithinMs;
    this.cancel = new LazyAbort(this);
  }

  get signal(): AbortSignal {
    return this.cancel.signal;
  }

  get stop(): StopSignal {
    return this.cancel;
  }

  questionRelaysSettled(_taskId: string): Promise<void> {
    return Promise.reject(new Error('A method that answers at once has no questions to relay'));
  }

  send(_message: Record<string, unknown>): void {
    throw new Error('A method that answers at once cannot send messages');
  }

  openStream(_resumableAs?: string): void {
    throw new Error('A method that answers at once cannot open a stream');
  }

  isStreamRead(): boolean {
    return false;
  }

  disconnect(): void {}

  /** What a cancellation does besides aborting the signal: nothing, for an answer that comes at once. */
  onAbort(): void {}
}

/**
 * A method that answers with its result alone takes milliseconds at most, and a notifications/cancelled
 * that arrives meanwhile finds it answered, as one arriving just after would.
 */
async function answerAtOnce(message: JsonRpcRequest, ctx: McpContext, session: McpSession, caller: Caller): Promise<McpReply> {
  const requestContext = new LegacyRequest(ctx, session, caller, message.id);
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
 * A request whose answer may become an SSE stream (tools/call, tasks/result): its method's context,
 * and what opens, counts and ends its stream. Its state is fields and its behaviour methods, not
 * closures: a tasks/result may wait for hours, thousands at once, and all a request holds is held as
 * long.
 */
class StreamingRequest extends LegacyRequest {
  private stream: SseStream | undefined;
  private streamKey = '';
  private readonly inFlightKey: string;
  /** Settles what `answer()` returned: the first of the method's JSON answer and its stream. */
  private decide: ((reply: McpReply) => void) | undefined;

  constructor(
    ctx: McpContext,
    session: McpSession,
    caller: Caller,
    private readonly message: JsonRpcRequest,
    private readonly streamPlace: StreamPlace | undefined,
  ) {
    super(ctx, session, caller, message.id);
    this.inFlightKey = inFlightKey(session.id, message.id);
  }

  /** Runs the method: resolves with its JSON answer, or with its stream as soon as it opens one. */
  answer(): Promise<McpReply> {
    inFlight.set(this.inFlightKey, this.cancel);
    const answered = new Promise<McpReply>((resolve) => (this.decide = resolve));
    void this.run();
    return answered;
  }

  private async run(): Promise<void> {
    const { message } = this;
    let final: Record<string, unknown>;
    let trouble: StorageTrouble | undefined;
    try {
      final = { jsonrpc: '2.0', id: message.id, result: await dispatch(message.method, message.params, this) };
    } catch (error) {
      trouble = storageTroubleIn(error);
      final = rpcErrorBody(message.id, toErrorObject(error, message.method));
    } finally {
      inFlight.delete(this.inFlightKey);
    }
    if (this.stream) {
      try {
        finishResponseStream(this.ctx, this.session.id, this.streamKey, this.cancel.signal, final);
      } catch (error) {
        console.error(`MCP ${JSON.stringify(message.method)}: ending the response stream failed`, error);
      }
      return;
    }
    this.streamPlace?.release();
    // Not yet a stream: storage trouble is said with the status a client retries on.
    this.settle(trouble ? httpErrorReply(storageRefusal(trouble), message.id) : jsonReply(final));
  }

  /** Without a response to send, the HTTP exchange still has to end: as an empty, closed stream. */
  override onAbort(): void {
    this.openStream();
  }

  override openStream(resumableAs?: string): void {
    if (this.stream) return;
    const { ctx, session, caller } = this;
    this.streamKey = resumableAs ?? `post:${crypto.randomUUID()}`;
    const stream = (this.stream = ctx.streams.openResponse(session, this.streamKey, this.message.id));
    // A stream no one could foresee (a quick tool's progress, a cancelled request) is counted all the same.
    if (this.streamPlace) this.streamPlace.holdUntilEnd(stream);
    else countMcpStream(caller.userId, session.id, stream);
    closeWhenTokenRevoked(stream, caller.tokenId);
    this.settle(streamReply(stream));
  }

  /** The first answer decides; the rest are late. */
  private settle(reply: McpReply): void {
    const decide = this.decide;
    this.decide = undefined;
    decide?.(reply);
  }

  override send(outgoing: Record<string, unknown>): void {
    this.openStream();
    this.ctx.streams.sendOnResponse(this.session.id, this.streamKey, outgoing);
  }

  override questionRelaysSettled(taskId: string): Promise<void> {
    return this.ctx.streams.questionRelaysSettled(taskId);
  }

  override isStreamRead(): boolean {
    return this.stream !== undefined && this.ctx.streams.isResponseRead(this.streamKey);
  }

  override disconnect(): void {
    if (this.stream) this.ctx.streams.disconnectResponse(this.streamKey);
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
  return new StreamingRequest(ctx, session, caller, message, streamPlace).answer();
}

async function handleDelete(request: McpHttpRequest, ctx: McpContext, userId: string, facts: RequestFacts): Promise<McpReply> {
  const session = await requireSession(request, userId, facts);
  await endMcpSession(session.id, userId);
  stopSessionWork(ctx, session.id);
  return emptyReply(200);
}
