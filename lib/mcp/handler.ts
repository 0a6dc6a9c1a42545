import { createMcpSession, endMcpSession, getMcpSessionById, type McpSession } from '@/db/queries/sessions';
import { verifyBearer } from '@/lib/auth/tokens';
import type { TaskEngine } from '@/lib/tasks/engine';
import { ErrorCode, HttpError, isHttpError, isRpcError, type JsonRpcErrorObject } from './errors';
import {
  accepts,
  allowedOrigins,
  httpErrorResponse,
  jsonResponse,
  readBodyWithLimit,
  requireAccept,
  requireAllowedOrigin,
  requireJsonContentType,
  rpcErrorBody,
} from './http';
import { dispatch, serverCapabilities, type RequestContext } from './methods';
import {
  classifyMessage,
  initializeParamsSchema,
  latestProtocolVersion,
  parseParams,
  supportedProtocolVersions,
  type JsonRpcRequest,
} from './schema';
import { SseStream } from './sse';
import type { SessionStreams } from './session-streams';

export interface McpContext {
  engine: TaskEngine;
  streams: SessionStreams;
  appUrl: string;
  allowedOrigins: string[];
  maxBodyBytes: number;
  serverVersion: string;
}

const sessionHeader = 'mcp-session-id';
const versionHeader = 'mcp-protocol-version';

/** Requests in flight, so that notifications/cancelled and DELETE can stop them. */
const inFlight = new Map<string, AbortController>();
const inFlightKey = (sessionId: string, id: string | number) => `${sessionId}\u0000${typeof id}:${id}`;

/** The MCP endpoint (Streamable HTTP, 2025-11-25): one framework-free function for GET, POST and DELETE. */
export async function handleMcp(request: Request, ctx: McpContext): Promise<Response> {
  try {
    requireAllowedOrigin(request, allowedOrigins(ctx.appUrl, ctx.allowedOrigins));
    const user = authenticate(request, ctx);
    requireSupportedVersionHeader(request);
    switch (request.method) {
      case 'POST':
        return await handlePost(request, ctx, user.id);
      case 'GET':
        return handleGet(request, ctx, user.id);
      case 'DELETE':
        return handleDelete(request, ctx, user.id);
      default:
        throw new HttpError(405, ErrorCode.InvalidRequest, `Method Not Allowed: use POST, GET or DELETE`, {
          Allow: 'GET, POST, DELETE',
        });
    }
  } catch (error) {
    if (isHttpError(error)) return httpErrorResponse(error);
    if (isRpcError(error)) return jsonResponse(rpcErrorBody(null, error.toJson()), 400);
    console.error('MCP endpoint: unexpected error', error);
    return jsonResponse(rpcErrorBody(null, { code: ErrorCode.InternalError, message: 'Internal error' }), 500);
  }
}

function authenticate(request: Request, ctx: McpContext) {
  const check = verifyBearer(request.headers.get('authorization'));
  if (check.ok) return check.user;
  const resourceMetadata = `${ctx.appUrl}/.well-known/oauth-protected-resource`;
  const description = {
    missing: 'An access token is required: send Authorization: Bearer <token>',
    malformed: 'The access token is malformed',
    unknown: 'The access token is not valid',
    revoked: 'The access token has been revoked',
    expired: 'The access token has expired',
  }[check.reason];
  const challenge =
    check.reason === 'missing'
      ? `Bearer realm="mcp", resource_metadata="${resourceMetadata}"`
      : `Bearer realm="mcp", error="invalid_token", error_description="${description}"`;
  throw new HttpError(401, -32001, `Unauthorized: ${description}`, { 'WWW-Authenticate': challenge });
}

function requireSupportedVersionHeader(request: Request): void {
  const version = request.headers.get(versionHeader);
  if (version !== null && !(supportedProtocolVersions as readonly string[]).includes(version)) {
    throw new HttpError(
      400,
      ErrorCode.InvalidRequest,
      `Bad Request: unsupported MCP-Protocol-Version ${version}; supported: ${supportedProtocolVersions.join(', ')}`,
    );
  }
}

/** The caller's live session named by Mcp-Session-Id: 400 without one, 404 for any other. */
function requireSession(request: Request, userId: string): McpSession {
  const sessionId = request.headers.get(sessionHeader);
  if (!sessionId) {
    throw new HttpError(400, ErrorCode.InvalidRequest, 'Bad Request: Mcp-Session-Id header is required; call initialize first');
  }
  const session = getMcpSessionById(sessionId);
  if (!session || session.userId !== userId || session.endedAt !== null) {
    throw new HttpError(404, ErrorCode.InvalidRequest, 'Session not found: it has ended or never existed; initialize a new one');
  }
  return session;
}

async function handlePost(request: Request, ctx: McpContext, userId: string): Promise<Response> {
  requireJsonContentType(request);
  requireAccept(request, ['application/json', 'text/event-stream']);
  const body = await readBodyWithLimit(request, ctx.maxBodyBytes);
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return jsonResponse(rpcErrorBody(null, { code: ErrorCode.ParseError, message: 'Parse error: the body is not valid JSON' }), 400);
  }
  const incoming = classifyMessage(parsed);

  if (incoming.kind === 'request' && incoming.message.method === 'initialize') {
    return initialize(incoming.message, ctx, userId);
  }
  const session = requireSession(request, userId);
  if (incoming.kind === 'notification') {
    if (incoming.message.method === 'notifications/cancelled') {
      const requestId = incoming.message.params?.requestId;
      if (typeof requestId === 'string' || typeof requestId === 'number') {
        inFlight.get(inFlightKey(session.id, requestId))?.abort(new Error('Cancelled by the client'));
      }
    }
    return new Response(null, { status: 202 });
  }
  if (incoming.kind === 'response') return new Response(null, { status: 202 });
  return respond(request, incoming.message, ctx, session, userId);
}

function initialize(message: JsonRpcRequest, ctx: McpContext, userId: string): Response {
  let params;
  try {
    params = parseParams(initializeParamsSchema, message.params);
  } catch (error) {
    if (!isRpcError(error)) throw error;
    return jsonResponse(rpcErrorBody(message.id, error.toJson()), 200);
  }
  const protocolVersion = (supportedProtocolVersions as readonly string[]).includes(params.protocolVersion)
    ? params.protocolVersion
    : latestProtocolVersion;
  const session = createMcpSession({
    id: crypto.randomUUID(),
    userId,
    protocolVersion,
    clientName: params.clientInfo.name,
    clientVersion: params.clientInfo.version,
    clientCapabilities: params.capabilities,
  });
  return jsonResponse(
    {
      jsonrpc: '2.0',
      id: message.id,
      result: {
        protocolVersion,
        capabilities: serverCapabilities(protocolVersion),
        serverInfo: { name: 'mcp-task-server', title: 'MCP Task Server', version: ctx.serverVersion },
        instructions:
          'Long-running tools run as tasks: call them with "task": {}, poll tasks/get, and fetch the outcome with tasks/result.',
      },
    },
    200,
    { 'Mcp-Session-Id': session.id },
  );
}

/**
 * Answers one request: as JSON when the result is all there is, or as an SSE stream once the method
 * must send messages first or wait long (then the result is the stream's last event).
 */
async function respond(
  request: Request,
  message: JsonRpcRequest,
  ctx: McpContext,
  session: McpSession,
  userId: string,
): Promise<Response> {
  const cancel = new AbortController();
  const key = inFlightKey(session.id, message.id);
  inFlight.set(key, cancel);
  let stream: SseStream | undefined;
  let markStreamed = () => {};
  const streamed = new Promise<'streamed'>((resolve) => (markStreamed = () => resolve('streamed')));
  const openStream = () => {
    if (!stream) {
      stream = new SseStream();
      stream.signal.addEventListener('abort', () => cancel.abort(new Error('The client closed the stream')), { once: true });
      markStreamed();
    }
    return stream;
  };
  const requestContext: RequestContext = {
    engine: ctx.engine,
    session,
    userId,
    signal: AbortSignal.any([cancel.signal, request.signal]),
    send: (outgoing) => openStream().send(outgoing),
    openStream: () => void openStream(),
  };

  const reply = (async () => {
    try {
      return { jsonrpc: '2.0', id: message.id, result: await dispatch(message.method, message.params, requestContext) };
    } catch (error) {
      return rpcErrorBody(message.id, toErrorObject(error, message.method));
    } finally {
      inFlight.delete(key);
    }
  })();

  const first = await Promise.race([reply, streamed]);
  if (first !== 'streamed') return jsonResponse(first);
  const sse = stream!;
  void reply.then((final) => {
    sse.send(final);
    sse.close();
  });
  return sse.response();
}

function toErrorObject(error: unknown, method: string): JsonRpcErrorObject {
  if (isRpcError(error)) return error.toJson();
  if (error instanceof Error && error.name === 'AbortError') {
    return { code: ErrorCode.InternalError, message: `Request ${method} was cancelled` };
  }
  console.error(`MCP ${method}: unexpected error`, error);
  return { code: ErrorCode.InternalError, message: `Internal error while handling ${method}` };
}

function handleGet(request: Request, ctx: McpContext, userId: string): Response {
  if (!accepts(request, 'text/event-stream')) {
    throw new HttpError(406, ErrorCode.InvalidRequest, 'Not Acceptable: the Accept header must include text/event-stream');
  }
  const session = requireSession(request, userId);
  return ctx.streams.open(session.id, request.headers.get('last-event-id'));
}

function handleDelete(request: Request, ctx: McpContext, userId: string): Response {
  const session = requireSession(request, userId);
  endMcpSession(session.id, userId);
  ctx.streams.close(session.id);
  for (const [key, controller] of inFlight) {
    if (key.startsWith(`${session.id}\u0000`)) controller.abort(new Error('Session ended'));
  }
  return new Response(null, { status: 200 });
}
