import { mcpScope, resourceMetadataUrl } from '@/lib/auth/oauth/metadata';
import { verifyBearer } from '@/lib/auth/tokens';
import { storageTroubleIn } from '@/lib/storage/trouble';
import type { Caller, McpContext } from '../core/context';
import { ErrorCode, HttpError, isHttpError, isRpcError, storageRefusal } from '../core/errors';
import { maxJsonDepth, nestsDeeperThan, requestIdOf, type RequestId } from '../core/schema';
import { handleLegacy } from '../legacy/handler';
import { handleModern, speaksModern } from '../modern/handler';
import type { McpHttpRequest, McpReply } from './exchange';
import { getRateLimits } from './rate-limit';
import { allowedOrigins, httpErrorReply, jsonReply, requireAccept, requireAllowedOrigin, requireJsonContentType, rpcErrorBody } from './replies';
import { summarizeMessage, type RequestFacts } from './request-facts';

const originChecks = new WeakMap<McpContext, (origin: string) => boolean>();

function originCheckOf(ctx: McpContext): (origin: string) => boolean {
  let check = originChecks.get(ctx);
  if (!check) {
    check = allowedOrigins(ctx.appUrl, ctx.allowedOrigins);
    originChecks.set(ctx, check);
  }
  return check;
}

/**
 * The MCP endpoint (Streamable HTTP): one framework-free function for GET, POST and DELETE, for both
 * protocol eras. Origin, token, body and rate limits are checked here once; then the request goes to
 * its era's layer: the modern one (2026-07-28: stateless, every request says its version in `_meta`)
 * or the legacy one (2025-11-25 and earlier: initialize, sessions, GET streams). What it learns of the
 * request on the way (caller, message, session) it notes in `facts`.
 */
export async function handleMcp(request: McpHttpRequest, ctx: McpContext, facts: RequestFacts = {}): Promise<McpReply> {
  // Once the body is read, every refusal (a rate limit included) answers the request by its id.
  let id: RequestId | null = null;
  try {
    requireAllowedOrigin(request, originCheckOf(ctx));
    const caller = await authenticate(request.header('authorization'), ctx.appUrl);
    facts.caller = caller;
    const posted = request.method === 'POST' ? await readMessage(request, ctx.maxBodyBytes) : undefined;
    if (posted?.ok) {
      facts.message = summarizeMessage(posted.value);
      id = requestIdOf(posted.value);
    }
    await getRateLimits().admit(caller, facts.message);
    if (posted && !posted.ok) return posted.reply;
    if (speaksModern(request, posted?.value)) return await handleModern(request, posted?.value, ctx, caller, facts);
    return await handleLegacy(request, posted?.value, ctx, caller, facts);
  } catch (error) {
    if (isHttpError(error)) return httpErrorReply(error, id);
    if (isRpcError(error)) return jsonReply(rpcErrorBody(id, error.toJson()), 400);
    const trouble = storageTroubleIn(error);
    if (trouble) return httpErrorReply(storageRefusal(trouble), id);
    console.error('MCP endpoint: unexpected error', error);
    return jsonReply(rpcErrorBody(id, { code: ErrorCode.InternalError, message: 'Internal error' }), 500);
  }
}

/** A POST's JSON-RPC message, or the error reply for a body that is not one. */
async function readMessage(request: McpHttpRequest, maxBodyBytes: number): Promise<{ ok: true; value: unknown } | { ok: false; reply: McpReply }> {
  requireJsonContentType(request);
  requireAccept(request, ['application/json', 'text/event-stream']);
  const body = await request.text(maxBodyBytes);
  let value: unknown;
  try {
    value = JSON.parse(body);
  } catch {
    return { ok: false, reply: jsonReply(rpcErrorBody(null, { code: ErrorCode.ParseError, message: 'Parse error: the body is not valid JSON' }), 400) };
  }
  if (nestsDeeperThan(value, maxJsonDepth)) {
    return {
      ok: false,
      reply: jsonReply(rpcErrorBody(null, { code: ErrorCode.InvalidRequest, message: `Invalid Request: the message nests deeper than ${maxJsonDepth} levels` }), 400),
    };
  }
  return { ok: true, value };
}

/**
 * A Bearer challenge (RFC 6750 section 3). Its values are quoted-strings that may hold neither `"`
 * nor a backslash, even escaped: a strict client that meets one loses every parameter after it.
 */
function bearerChallenge(params: Record<string, string>): string {
  const quoted = Object.entries(params).map(([name, value]) => `${name}="${value.replace(/["\\]/g, "'")}"`);
  return `Bearer ${quoted.join(', ')}`;
}

async function authenticate(authorization: string | null, appUrl: string): Promise<Caller> {
  const check = await verifyBearer(authorization, appUrl);
  if (check.ok) return { userId: check.user.id, tokenId: check.tokenId };
  const description = {
    missing: 'An access token is required: send Authorization: Bearer <token>',
    malformed: 'The access token is malformed',
    unknown: 'The access token is not valid',
    revoked: 'The access token has been revoked',
    expired: 'The access token has expired or has been revoked',
    wrong_audience: 'The access token was issued for another resource',
    insufficient_scope: `The access token does not carry the ${mcpScope} scope`,
  }[check.reason];
  // RFC 9728 section 5.1: every challenge says where to discover how to get a token (and which scope).
  const discovery = { resource_metadata: resourceMetadataUrl(appUrl), scope: mcpScope };
  if (check.reason === 'insufficient_scope') {
    throw new HttpError(403, -32001, `Forbidden: ${description}`, {
      'WWW-Authenticate': bearerChallenge({ realm: 'mcp', error: 'insufficient_scope', error_description: description, ...discovery }),
    });
  }
  // RFC 6750 section 3.1: a request without a bearer token gets no error code.
  const challenge =
    check.reason === 'missing'
      ? bearerChallenge({ realm: 'mcp', ...discovery })
      : bearerChallenge({ realm: 'mcp', error: 'invalid_token', error_description: description, ...discovery });
  throw new HttpError(401, -32001, `Unauthorized: ${description}`, { 'WWW-Authenticate': challenge });
}
