import { ErrorCode, HttpError, type JsonRpcErrorObject } from './errors';
import type { RequestId } from './schema';

export function jsonResponse(body: unknown, status = 200, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { 'Content-Type': 'application/json', 'Cache-Control': 'no-store', ...headers },
  });
}

/** A JSON-RPC error response; without an id when the request's id could not be read. */
export function rpcErrorBody(id: RequestId | null, error: JsonRpcErrorObject) {
  return { jsonrpc: '2.0' as const, ...(id !== null ? { id } : {}), error };
}

/** The response for an HttpError: its status, and a JSON-RPC error body a client can show. */
export function httpErrorResponse(error: HttpError): Response {
  const data = error.data !== undefined ? { data: error.data } : {};
  return jsonResponse(rpcErrorBody(null, { code: error.rpcCode, message: error.message, ...data }), error.status, error.headers);
}

/** The media types an Accept header lists (parameters and q-values dropped). */
function acceptedTypes(request: Request): string[] {
  return (request.headers.get('accept') ?? '')
    .split(',')
    .map((part) => part.split(';')[0].trim().toLowerCase())
    .filter(Boolean);
}

export function accepts(request: Request, mediaType: string): boolean {
  const [type] = mediaType.split('/');
  return acceptedTypes(request).some((accepted) => accepted === mediaType || accepted === `${type}/*` || accepted === '*/*');
}

export function requireAccept(request: Request, mediaTypes: string[]): void {
  const missing = mediaTypes.filter((mediaType) => !accepts(request, mediaType));
  if (missing.length > 0) {
    throw new HttpError(406, ErrorCode.InvalidRequest, `Not Acceptable: the Accept header must include ${mediaTypes.join(' and ')}`);
  }
}

export function requireJsonContentType(request: Request): void {
  const contentType = (request.headers.get('content-type') ?? '').split(';')[0].trim().toLowerCase();
  if (contentType !== 'application/json') {
    throw new HttpError(415, ErrorCode.InvalidRequest, 'Unsupported Media Type: Content-Type must be application/json');
  }
}

/** Reads the body, refusing (413) as soon as it passes the limit rather than after buffering it all. */
export async function readBodyWithLimit(request: Request, maxBytes: number): Promise<string> {
  const declared = Number(request.headers.get('content-length'));
  const tooLarge = () =>
    new HttpError(413, ErrorCode.InvalidRequest, `Payload Too Large: the body exceeds the limit of ${maxBytes} bytes`);
  if (Number.isFinite(declared) && declared > maxBytes) throw tooLarge();
  if (!request.body) return '';
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let received = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    received += value.byteLength;
    if (received > maxBytes) {
      await reader.cancel().catch(() => {});
      throw tooLarge();
    }
    chunks.push(value);
  }
  return new TextDecoder().decode(Buffer.concat(chunks));
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
export function requireAllowedOrigin(request: Request, allows: (origin: string) => boolean): void {
  const origin = request.headers.get('origin');
  if (origin !== null && !allows(origin)) {
    throw new HttpError(403, ErrorCode.InvalidRequest, `Forbidden: origin ${origin} is not allowed`);
  }
}
