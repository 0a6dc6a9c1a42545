import { ErrorCode, HttpError, type JsonRpcErrorObject } from '../core/errors';
import type { McpHttpRequest, McpReply } from './exchange';
import type { RequestId } from '../core/schema';

export function jsonReply(body: unknown, status = 200, headers: Record<string, string> = {}): McpReply {
  return { status, headers: { 'Content-Type': 'application/json', 'Cache-Control': 'no-store', ...headers }, json: body };
}

/** A reply without a body: 202 for notifications and responses, 200 for DELETE. */
export function emptyReply(status: number): McpReply {
  return { status, headers: {} };
}

/** A JSON-RPC error response; without an id when the request's id could not be read. */
export function rpcErrorBody(id: RequestId | null, error: JsonRpcErrorObject) {
  return { jsonrpc: '2.0' as const, ...(id !== null ? { id } : {}), error };
}

/** The response for an HttpError: its status, and a JSON-RPC error body a client can show (with the request's id once known). */
export function httpErrorReply(error: HttpError, id: RequestId | null = null): McpReply {
  const data = error.data !== undefined ? { data: error.data } : {};
  return jsonReply(rpcErrorBody(id, { code: error.rpcCode, message: error.message, ...data }), error.status, error.headers);
}

let lastAcceptHeader: string | undefined;
let lastAcceptedTypes: readonly string[] = [];

/**
 * The media types an Accept header lists (parameters and q-values dropped). A client sends the same
 * header with every request, so the last one read is kept with its types.
 */
function acceptedTypes(request: McpHttpRequest): readonly string[] {
  const header = request.header('accept') ?? '';
  if (header !== lastAcceptHeader) {
    lastAcceptedTypes = header
      .split(',')
      .map((part) => part.split(';')[0].trim().toLowerCase())
      .filter(Boolean);
    lastAcceptHeader = header;
  }
  return lastAcceptedTypes;
}

export function accepts(request: McpHttpRequest, mediaType: string): boolean {
  const [type] = mediaType.split('/');
  return acceptedTypes(request).some((accepted) => accepted === mediaType || accepted === `${type}/*` || accepted === '*/*');
}

export function requireAccept(request: McpHttpRequest, mediaTypes: string[]): void {
  const missing = mediaTypes.filter((mediaType) => !accepts(request, mediaType));
  if (missing.length > 0) {
    throw new HttpError(406, ErrorCode.InvalidRequest, `Not Acceptable: the Accept header must include ${mediaTypes.join(' and ')}`);
  }
}

export function requireJsonContentType(request: McpHttpRequest): void {
  const contentType = (request.header('content-type') ?? '').split(';')[0].trim().toLowerCase();
  if (contentType !== 'application/json') {
    throw new HttpError(415, ErrorCode.InvalidRequest, 'Unsupported Media Type: Content-Type must be application/json');
  }
}

const isLoopbackHostname = (hostname: string) => hostname === 'localhost' || hostname === '[::1]' || /^127(\.\d{1,3}){3}$/.test(hostname);

/**
 * Which origins a browser page may call /mcp from: this server's own and those configured; and, when
 * the server itself is on loopback, any loopback origin (a local web inspector on another port). DNS
 * rebinding is what this stops, and a rebound page still carries its own foreign origin.
 */
export function allowedOrigins(appUrl: string, extra: string[]): (origin: string) => boolean {
  const own = new URL(appUrl);
  const listed = new Set([own.origin, ...extra]);
  const loopbackServer = isLoopbackHostname(own.hostname);
  return (origin) => {
    const normalised = origin.replace(/\/+$/, '');
    if (listed.has(normalised)) return true;
    if (!loopbackServer || !URL.canParse(normalised)) return false;
    const url = new URL(normalised);
    return (url.protocol === 'http:' || url.protocol === 'https:') && isLoopbackHostname(url.hostname);
  };
}

/** Requests from a browser carry Origin; one that is not ours is refused (DNS rebinding, cross-site calls). */
export function requireAllowedOrigin(request: McpHttpRequest, allows: (origin: string) => boolean): void {
  const origin = request.header('origin');
  if (origin !== null && !allows(origin)) {
    throw new HttpError(403, ErrorCode.InvalidRequest, `Forbidden: origin ${origin} is not allowed`);
  }
}
