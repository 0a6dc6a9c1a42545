import { ErrorCode, HttpError } from '../core/errors';
import type { JsonRpcRequest } from '../core/schema';
import type { McpHttpRequest } from '../http/exchange';

/**
 * The request headers a 2026-07-28 client mirrors from its body, so that proxies and load balancers can
 * route on them (`MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`). A server that reads the body must
 * refuse a request whose headers are missing or say something else: the proxy in front may have acted
 * on them. Each refusal is -32020 (HeaderMismatch) with HTTP 400.
 */

/** The methods whose target is mirrored in Mcp-Name, and the param that names it. */
const namedBy: Record<string, string> = {
  'tools/call': 'name',
  'prompts/get': 'name',
  'resources/read': 'uri',
  // The tasks extension: so that a proxy can route every request about a task to where it lives.
  'tasks/get': 'taskId',
  'tasks/update': 'taskId',
  'tasks/cancel': 'taskId',
};

const sentinel = /^=\?base64\?([A-Za-z0-9+/]*={0,2})\?=$/;
/** Visible ASCII, space and tab (RFC 9110 field values). */
const plainHeaderValue = /^[\x20-\x7e\t]*$/;

function mismatch(message: string): HttpError {
  return new HttpError(400, ErrorCode.HeaderMismatch, `Header mismatch: ${message}`);
}

/** A mirrored value as the client meant it: Base64 sentinel values decoded (exactly as the transport defines them). */
export function decodeHeaderValue(name: string, value: string): string {
  if (!plainHeaderValue.test(value)) throw mismatch(`the ${name} header holds characters a header value may not`);
  const encoded = sentinel.exec(value);
  if (!encoded) return value;
  const bytes = Buffer.from(encoded[1], 'base64');
  if (bytes.toString('base64') !== encoded[1].padEnd(Math.ceil(encoded[1].length / 4) * 4, '=')) {
    throw mismatch(`the ${name} header's Base64 value is malformed`);
  }
  const text = new TextDecoder('utf-8', { fatal: false }).decode(bytes);
  return text;
}

const quote = (value: string) => JSON.stringify(value.length > 80 ? `${value.slice(0, 80)}…` : value);

/** Throws HeaderMismatch (400) without an MCP-Protocol-Version header: every modern request carries one. */
export function requireVersionHeader(request: McpHttpRequest): void {
  if (request.header('mcp-protocol-version') === null) throw mismatch('the MCP-Protocol-Version header is required');
}

/** Throws HeaderMismatch (400) unless the mirrored headers say what the body (its `_meta` read already) says. */
export function requireMatchingHeaders(request: McpHttpRequest, message: JsonRpcRequest, bodyVersion: string): void {
  const version = request.header('mcp-protocol-version') ?? '';
  if (version !== bodyVersion) {
    throw mismatch(`MCP-Protocol-Version header value ${quote(version)} does not match body value ${quote(bodyVersion)}`);
  }
  const method = request.header('mcp-method');
  if (method === null) throw mismatch('the Mcp-Method header is required');
  if (method !== message.method) throw mismatch(`Mcp-Method header value ${quote(method)} does not match body value ${quote(message.method)}`);
  const param = Object.hasOwn(namedBy, message.method) ? namedBy[message.method] : undefined;
  if (!param) return;
  const bodyName = message.params?.[param];
  const header = request.header('mcp-name');
  if (header === null) {
    // Without a name in the body the method's own validation says what is wrong.
    if (typeof bodyName === 'string') throw mismatch(`the Mcp-Name header is required for ${message.method}`);
    return;
  }
  const name = decodeHeaderValue('Mcp-Name', header);
  if (name !== bodyName) {
    throw mismatch(`Mcp-Name header value ${quote(name)} does not match body value ${quote(typeof bodyName === 'string' ? bodyName : String(bodyName))}`);
  }
}
