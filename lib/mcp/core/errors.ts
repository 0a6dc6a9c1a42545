import type { StorageTrouble } from '@/db/errors';
import { storageTroubleMessage } from '@/lib/storage/trouble';
/** JSON-RPC 2.0 error codes used by MCP. */
export const ErrorCode = {
  ParseError: -32700,
  InvalidRequest: -32600,
  MethodNotFound: -32601,
  InvalidParams: -32602,
  InternalError: -32603,
  /** 2026-07-28: the mirrored HTTP headers do not match the body, or a required one is missing. */
  HeaderMismatch: -32020,
  /** 2026-07-28: the request needs a capability (or extension) the client did not declare on it. */
  MissingRequiredClientCapability: -32021,
  /** 2026-07-28: the request's protocol version is not one this server speaks. */
  UnsupportedProtocolVersion: -32022,
} as const;

export interface JsonRpcErrorObject {
  code: number;
  message: string;
  data?: unknown;
}

/** An error that becomes a JSON-RPC error response; anything else thrown becomes -32603. */
export class RpcError extends Error {
  override name = 'RpcError';
  constructor(
    readonly code: number,
    message: string,
    readonly data?: unknown,
  ) {
    super(message);
  }

  toJson(): JsonRpcErrorObject {
    return { code: this.code, message: this.message, ...(this.data !== undefined ? { data: this.data } : {}) };
  }
}

export function isRpcError(error: unknown): error is RpcError {
  return error instanceof Error && error.name === 'RpcError' && typeof (error as RpcError).code === 'number';
}

/** An error that ends the HTTP exchange with a status code before any JSON-RPC dispatch. */
export class HttpError extends Error {
  override name = 'HttpError';
  constructor(
    readonly status: number,
    readonly rpcCode: number,
    message: string,
    readonly headers: Record<string, string> = {},
    readonly data?: unknown,
  ) {
    super(message);
  }
}

export function isHttpError(error: unknown): error is HttpError {
  return error instanceof Error && error.name === 'HttpError' && typeof (error as HttpError).status === 'number';
}

/**
 * 503 with Retry-After, for a request storage could not serve: the message says which trouble, and
 * `data` carries `retryAfterSeconds` and `storage` (the kind) for clients that act on them.
 */
export function storageRefusal(trouble: StorageTrouble): HttpError {
  const { retryAfterSeconds, kind } = trouble;
  return new HttpError(503, ErrorCode.InternalError, storageTroubleMessage(trouble), { 'Retry-After': String(retryAfterSeconds) }, { retryAfterSeconds, storage: kind });
}
