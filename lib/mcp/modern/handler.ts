import { randomUUID } from 'node:crypto';
import { storageTroubleIn } from '@/lib/storage/trouble';
import type { Caller, McpContext } from '../core/context';
import { ErrorCode, HttpError, isHttpError, isRpcError, RpcError, storageRefusal, type JsonRpcErrorObject } from '../core/errors';
import { classifyMessage, supportedProtocolVersions as legacyProtocolVersions, type JsonRpcRequest } from '../core/schema';
import { serverInfoOf } from '../core/server-info';
import { countMcpStream, takeMcpStreamPlace, type StreamPlace } from '../http/caps';
import type { McpHttpRequest, McpReply } from '../http/exchange';
import { inFlight, LazyAbort, shuttingDown } from '../http/in-flight';
import { emptyReply, httpErrorReply, jsonReply, rpcErrorBody } from '../http/replies';
import type { RequestFacts } from '../http/request-facts';
import { SseStream } from '../http/sse';
import { closeWhenTokenRevoked } from '../http/token-streams';
import type { ModernCall, ModernMethod } from './call';
import { discover } from './discover';
import { requireMatchingHeaders, requireVersionHeader } from './headers';
import { metaKey, readModernClient, requestMetaOf, requireSpokenVersion, type ModernClient } from './protocol';
import { listen, readListenFilter } from './subscriptions';
import { cancelTask, getTask, updateTask } from './tasks';
import { callTool, listTools } from './tool-calls';

/**
 * The modern era (2026-07-28 and later): no session and no handshake. Every request is a POST that
 * carries its protocol version, client and capabilities in `_meta` (mirrored in headers that are checked
 * against the body), and is answered on its own: JSON, or an SSE stream of its own progress and log
 * messages ending with its response. Nothing is resumed: a client whose stream breaks sends the request
 * again, and durable work is found again through what it was given (a task id, a requestState).
 */

const methods: Record<string, ModernMethod> = {
  'server/discover': discover,
  'tools/list': listTools,
  'tools/call': callTool,
  'tasks/get': getTask,
  'tasks/update': updateTask,
  'tasks/cancel': cancelTask,
};

/** The methods whose answer may become an SSE stream (progress, log messages, a long wait); every other one answers at once. */
const streaming = new Set(['tools/call']);

/**
 * Whether a request speaks the modern era: a protocol version in its `_meta` (served statelessly even
 * with a stray Mcp-Session-Id, as the revision's versioning says), or else no Mcp-Session-Id and an
 * MCP-Protocol-Version header that names no legacy version (a version no one speaks is refused the
 * modern way, listing every version this server speaks). A legacy client's `initialize` carries
 * neither; a modern request for `initialize` finds no such method.
 */
export function speaksModern(request: McpHttpRequest, posted: unknown): boolean {
  const message = typeof posted === 'object' && posted !== null && !Array.isArray(posted) ? (posted as Record<string, unknown>) : undefined;
  if (requestMetaOf(message?.params)?.[metaKey.protocolVersion] !== undefined) return true;
  if (request.header('mcp-session-id') !== null) return false;
  const version = request.header('mcp-protocol-version');
  return version !== null && !(legacyProtocolVersions as readonly string[]).includes(version);
}

export async function handleModern(request: McpHttpRequest, posted: unknown, ctx: McpContext, caller: Caller, facts: RequestFacts): Promise<McpReply> {
  if (request.method !== 'POST') {
    throw new HttpError(405, ErrorCode.InvalidRequest, 'Method Not Allowed: protocol 2026-07-28 has no GET stream and no session to delete; send each request as a POST', {
      Allow: 'POST',
    });
  }
  const incoming = classifyMessage(posted);
  // The core protocol defines no client notifications on HTTP (closing a stream is the cancellation).
  if (incoming.kind === 'notification') return emptyReply(202);
  if (incoming.kind === 'response') {
    throw new RpcError(ErrorCode.InvalidRequest, 'Invalid Request: in protocol 2026-07-28 a client sends no responses; answer input requests by retrying the request with inputResponses');
  }
  const message = incoming.message;
  let client: ModernClient;
  try {
    // In the order clients can rely on: the version header, the body's _meta, whether the two agree
    // (a proxy may have acted on the headers), and only then whether the version is one this server speaks.
    requireVersionHeader(request);
    client = readModernClient(message.params);
    requireMatchingHeaders(request, message, client.protocolVersion);
    requireSpokenVersion(client);
  } catch (error) {
    if (isHttpError(error)) return httpErrorReply(error, message.id);
    throw error;
  }
  facts.client = { name: client.name, version: client.version, protocolVersion: client.protocolVersion };
  if (message.method === 'subscriptions/listen') return openSubscription(message, ctx, caller, client);
  const method = Object.hasOwn(methods, message.method) ? methods[message.method] : undefined;
  if (!method) {
    return jsonReply(rpcErrorBody(message.id, { code: ErrorCode.MethodNotFound, message: `Method not found: ${message.method}` }), 404);
  }
  if (!streaming.has(message.method)) return answerAtOnce(method, message, ctx, caller, client);
  return respond(method, message, request, ctx, caller, client);
}

/** A result as this era sends it: with its resultType, and the server's name in `_meta`. */
function finished(result: Record<string, unknown>, ctx: McpContext): Record<string, unknown> {
  const meta = (result._meta ?? {}) as Record<string, unknown>;
  return {
    ...result,
    resultType: result.resultType ?? 'complete',
    _meta: { ...meta, [metaKey.serverInfo]: serverInfoOf(ctx.serverVersion, ctx.appUrl) },
  };
}

/** An error as a JSON-RPC error object, with the HTTP status it gets when the answer is not yet a stream. */
function failure(error: unknown, method: string): { status: number; error: JsonRpcErrorObject; headers?: Record<string, string> } {
  if (isHttpError(error)) {
    return { status: error.status, headers: error.headers, error: { code: error.rpcCode, message: error.message, ...(error.data !== undefined ? { data: error.data } : {}) } };
  }
  if (isRpcError(error)) return { status: 200, error: error.toJson() };
  const trouble = storageTroubleIn(error);
  if (trouble) return failure(storageRefusal(trouble), method);
  if ((error instanceof Error || error instanceof DOMException) && error.name === 'AbortError') {
    return { status: 200, error: { code: ErrorCode.InternalError, message: `Request ${method} was cancelled` } };
  }
  console.error(`MCP ${JSON.stringify(method)}: unexpected error`, error);
  return { status: 500, error: { code: ErrorCode.InternalError, message: `Internal error while handling ${method}` } };
}

/**
 * What a method handler gets besides its params. A class, not an object literal: V8 gives each literal
 * with a getter of its own a hidden class of its own, made where only a full collection frees it, and a
 * request's signal must stay a getter (read only by what can be stopped: a request that never reads it
 * never makes it).
 */
class ModernRequest implements ModernCall {
  readonly engine: ModernCall['engine'];
  readonly userId: string;
  readonly tokenId: string;
  readonly requestId: ModernCall['requestId'];
  readonly serverVersion: string;
  readonly heartbeatMs: number;
  readonly roundWaitMs: number;
  readonly send: ModernCall['send'];
  readonly isStreamRead: ModernCall['isStreamRead'];
  readonly openStream: ModernCall['openStream'];
  readonly holdStreamPlace: ModernCall['holdStreamPlace'];

  constructor(
    message: JsonRpcRequest,
    ctx: McpContext,
    caller: Caller,
    readonly client: ModernClient,
    private readonly cancel: { readonly signal: AbortSignal },
    outlet: Pick<ModernCall, 'send' | 'isStreamRead' | 'openStream' | 'holdStreamPlace'>,
  ) {
    this.engine = ctx.engine;
    this.userId = caller.userId;
    this.tokenId = caller.tokenId;
    this.requestId = message.id;
    this.serverVersion = ctx.serverVersion;
    this.heartbeatMs = ctx.heartbeatMs;
    this.roundWaitMs = ctx.roundWaitMs;
    this.send = outlet.send;
    this.isStreamRead = outlet.isStreamRead;
    this.openStream = outlet.openStream;
    this.holdStreamPlace = outlet.holdStreamPlace;
  }

  get signal(): AbortSignal {
    return this.cancel.signal;
  }
}

/**
 * Registers a request so that shutdown stops it; closing the response (the client's cancellation) stops
 * it too, once anything listens to its signal (until then there is nothing to stop).
 */
function track(request: McpHttpRequest): { cancel: LazyAbort; done(): void } {
  const key = `modern\u0000${randomUUID()}`;
  const cancelled = () => cancel.abort(new DOMException('The client closed the request', 'AbortError'));
  let hooked = false;
  const cancel = new LazyAbort({
    onSignal: () => {
      hooked = true;
      if (request.signal.aborted) cancelled();
      else request.signal.addEventListener('abort', cancelled, { once: true });
    },
  });
  inFlight.set(key, cancel);
  return {
    cancel,
    done: () => {
      inFlight.delete(key);
      if (hooked) request.signal.removeEventListener('abort', cancelled);
    },
  };
}

/**
 * What a method that answers at once gets instead of a stream: nothing it may call. A method marked so
 * that reaches for a stream fails loudly rather than losing what it sent.
 */
const noStream: Pick<ModernCall, 'send' | 'isStreamRead' | 'openStream' | 'holdStreamPlace'> = {
  send: () => {
    throw new Error('A method that answers at once cannot send messages');
  },
  isStreamRead: () => false,
  openStream: () => {
    throw new Error('A method that answers at once cannot open a stream');
  },
  holdStreamPlace: () => Promise.reject(new Error('A method that answers at once holds no stream place')),
};

/**
 * A method that answers with its result alone (tasks/get, tools/list…): no stream, no place at the
 * stream cap, and nothing a closed connection or a shutdown would stop: it takes milliseconds at most.
 */
async function answerAtOnce(method: ModernMethod, message: JsonRpcRequest, ctx: McpContext, caller: Caller, client: ModernClient): Promise<McpReply> {
  const call = new ModernRequest(message, ctx, caller, client, new LazyAbort(), noStream);
  try {
    return jsonReply({ jsonrpc: '2.0', id: message.id, result: finished(await method(message.params, call), ctx) });
  } catch (error) {
    const failed = failure(error, message.method);
    return jsonReply(rpcErrorBody(message.id, failed.error), failed.status, failed.headers);
  }
}

/**
 * Answers one request as JSON, or as an SSE stream once it must send something first (progress, log
 * messages); the stream is the request's own and ends with its response.
 */
async function respond(method: ModernMethod, message: JsonRpcRequest, request: McpHttpRequest, ctx: McpContext, caller: Caller, client: ModernClient): Promise<McpReply> {
  const { cancel, done } = track(request);
  let stream: SseStream | undefined;
  let place: StreamPlace | undefined;
  let markStreamed = () => {};
  const streamed = new Promise<'streamed'>((resolve) => (markStreamed = () => resolve('streamed')));
  const openStream = () => {
    if (stream) return;
    stream = new SseStream(ctx.heartbeatMs);
    // A stream no one could foresee (a quick tool's progress) is counted all the same, past the cap if need be.
    if (place) place.holdUntilEnd(stream);
    else countMcpStream(caller.userId, null, stream);
    closeWhenTokenRevoked(stream, caller.tokenId);
    stream.onClose(() => cancel.abort(new DOMException('The client closed the stream', 'AbortError')));
    markStreamed();
  };
  const call = new ModernRequest(message, ctx, caller, client, cancel, {
    send: (outgoing) => {
      openStream();
      stream!.send(outgoing);
    },
    isStreamRead: () => stream !== undefined && !stream.closed,
    openStream,
    holdStreamPlace: async () => {
      if (stream || place) return;
      place = await takeMcpStreamPlace(caller.userId, null);
    },
  });
  const reply = (async () => {
    try {
      return { status: 200, body: { jsonrpc: '2.0', id: message.id, result: finished(await method(message.params, call), ctx) } as Record<string, unknown> };
    } catch (error) {
      const failed = failure(error, message.method);
      return { status: failed.status, headers: failed.headers, body: rpcErrorBody(message.id, failed.error) as Record<string, unknown> };
    } finally {
      done();
      // Answered as JSON: the place is given back now (a stream gives it back when it ends).
      if (!stream) place?.release();
    }
  })();
  const first = await Promise.race([reply, streamed]);
  if (first !== 'streamed') return jsonReply(first.body, first.status, first.headers);
  const opened = stream!;
  reply
    .then((final) => {
      // A request its client cancelled gets no response; one the server stops gets none either.
      if (!cancel.signal.aborted) opened.send(final.body);
    })
    .finally(() => opened.close())
    .catch((error: unknown) => console.error(`MCP ${JSON.stringify(message.method)}: ending the response stream failed`, error));
  return { status: 200, headers: {}, stream: opened };
}

/**
 * subscriptions/listen: a stream that stays open until the client closes it. When the server stops, it
 * ends the subscription gracefully: the request's response, then the end of the stream.
 */
async function openSubscription(message: JsonRpcRequest, ctx: McpContext, caller: Caller, client: ModernClient): Promise<McpReply> {
  let filter;
  let place;
  try {
    filter = readListenFilter(message.params, { client });
    place = await takeMcpStreamPlace(caller.userId, null);
  } catch (error) {
    const failed = failure(error, message.method);
    return jsonReply(rpcErrorBody(message.id, failed.error), failed.status, failed.headers);
  }
  const stream = new SseStream(ctx.heartbeatMs);
  place.holdUntilEnd(stream);
  closeWhenTokenRevoked(stream, caller.tokenId);
  const controller = new AbortController();
  const key = `modern\u0000${randomUUID()}`;
  inFlight.set(key, controller);
  const call = new ModernRequest(message, ctx, caller, client, controller, {
    send: (outgoing) => stream.send(outgoing),
    isStreamRead: () => !stream.closed,
    openStream: () => {},
    // The subscription's stream holds its place already.
    holdStreamPlace: async () => {},
  });
  let release = () => {};
  const end = () => {
    inFlight.delete(key);
    release();
  };
  stream.onClose(end);
  controller.signal.addEventListener(
    'abort',
    () => {
      if (controller.signal.reason === shuttingDown) {
        stream.send({ jsonrpc: '2.0', id: message.id, result: finished({ _meta: { [metaKey.subscriptionId]: message.id } }, ctx) });
      }
      stream.close();
    },
    { once: true },
  );
  try {
    release = await listen(stream, filter, call);
    if (stream.closed) release();
  } catch (error) {
    stream.send(rpcErrorBody(message.id, failure(error, message.method).error));
    stream.close();
  }
  return { status: 200, headers: {}, stream };
}
