import { z } from 'zod';
import { logLevels } from '@/lib/tools/define';
import { ErrorCode, RpcError } from './errors';

/** Protocol versions this server speaks, preferred first. Only the first has tasks. */
export const supportedProtocolVersions = ['2025-11-25', '2025-06-18', '2025-03-26'] as const;
export const latestProtocolVersion = supportedProtocolVersions[0];
export const tasksProtocolVersion = '2025-11-25';
/** The only revision with JSON-RPC batches. */
export const batchProtocolVersion = '2025-03-26';

const requestId = z.union([z.string(), z.number().int()]);
const meta = z.record(z.string(), z.unknown());

export const jsonRpcRequestSchema = z.object({
  jsonrpc: z.literal('2.0'),
  id: requestId,
  method: z.string(),
  params: z.record(z.string(), z.unknown()).optional(),
});

export const jsonRpcNotificationSchema = z.object({
  jsonrpc: z.literal('2.0'),
  method: z.string(),
  params: z.record(z.string(), z.unknown()).optional(),
});

export const jsonRpcResponseSchema = z.union([
  z.object({ jsonrpc: z.literal('2.0'), id: requestId, result: z.record(z.string(), z.unknown()) }),
  z.object({
    jsonrpc: z.literal('2.0'),
    id: requestId.nullable(),
    error: z.object({ code: z.number().int(), message: z.string(), data: z.unknown().optional() }),
  }),
]);

export type JsonRpcRequest = z.infer<typeof jsonRpcRequestSchema>;
export type JsonRpcNotification = z.infer<typeof jsonRpcNotificationSchema>;
export type JsonRpcResponse = z.infer<typeof jsonRpcResponseSchema>;
export type RequestId = z.infer<typeof requestId>;

/** The id of a value that is a JSON-RPC request; null for anything else (a batch, a notification, a response). */
export function requestIdOf(value: unknown): RequestId | null {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return null;
  try {
    const incoming = classifyMessage(value);
    return incoming.kind === 'request' ? incoming.message.id : null;
  } catch {
    return null;
  }
}

export type IncomingMessage =
  | { kind: 'request'; message: JsonRpcRequest }
  | { kind: 'notification'; message: JsonRpcNotification }
  | { kind: 'response'; message: JsonRpcResponse };

/** Messages classified so far: the endpoint reads a request's id, its era's layer the whole message, with one validation. */
const classifiedMessages = new WeakMap<object, IncomingMessage>();

/** Classifies one parsed JSON value as a JSON-RPC message, or throws -32600 saying what is wrong. */
export function classifyMessage(value: unknown): IncomingMessage {
  const known = typeof value === 'object' && value !== null ? classifiedMessages.get(value) : undefined;
  if (known) return known;
  const incoming = classifyAnew(value);
  classifiedMessages.set(value as object, incoming);
  return incoming;
}

function classifyAnew(value: unknown): IncomingMessage {
  if (Array.isArray(value)) {
    throw new RpcError(ErrorCode.InvalidRequest, 'Invalid Request: batches are not supported; send one JSON-RPC message per POST');
  }
  if (typeof value !== 'object' || value === null) {
    throw new RpcError(ErrorCode.InvalidRequest, 'Invalid Request: the body must be a JSON-RPC message object');
  }
  const record = value as Record<string, unknown>;
  if (record.jsonrpc !== '2.0') throw new RpcError(ErrorCode.InvalidRequest, 'Invalid Request: jsonrpc must be "2.0"');
  if ('method' in record) {
    if ('id' in record) {
      const parsed = jsonRpcRequestSchema.safeParse(value);
      if (parsed.success) return { kind: 'request', message: parsed.data };
      throw new RpcError(ErrorCode.InvalidRequest, `Invalid Request: ${describeIssues(parsed.error)}`);
    }
    const parsed = jsonRpcNotificationSchema.safeParse(value);
    if (parsed.success) return { kind: 'notification', message: parsed.data };
    throw new RpcError(ErrorCode.InvalidRequest, `Invalid Request: ${describeIssues(parsed.error)}`);
  }
  const parsed = jsonRpcResponseSchema.safeParse(value);
  if (parsed.success) return { kind: 'response', message: parsed.data };
  throw new RpcError(ErrorCode.InvalidRequest, 'Invalid Request: not a JSON-RPC request, notification or response');
}

/** "field: problem; other.field: problem" — the message names every bad field. */
export function describeIssues(error: z.ZodError): string {
  return error.issues.map((issue) => `${issue.path.join('.') || '(root)'}: ${issue.message}`).join('; ');
}

/** Parses a method's params, or throws -32602 naming each bad field. Unknown fields are ignored. */
export function parseParams<Schema extends z.ZodType>(schema: Schema, params: unknown): z.infer<Schema> {
  const parsed = schema.safeParse(params ?? {});
  if (!parsed.success) throw new RpcError(ErrorCode.InvalidParams, `Invalid params: ${describeIssues(parsed.error)}`);
  return parsed.data;
}

const progressToken = z.union([z.string(), z.number()]);

/** What initialize may ask the server to store about a client: its name, version and capabilities. */
export const clientInfoLimits = { maxNameLength: 256, maxCapabilitiesBytes: 16 * 1024 } as const;

/**
 * A client's name or version, kept as text with its session and its tasks and shown in the dashboard,
 * in e-mails and in the log: no control characters (PostgreSQL's text cannot hold U+0000 at all).
 */
const clientLabel = z
  .string()
  .max(clientInfoLimits.maxNameLength)
  .regex(/^[^\u0000-\u001f\u007f]*$/, 'must not hold control characters')
  .refine((text) => text.isWellFormed(), 'must be well-formed Unicode (it holds a lone surrogate)');

/** The clientInfo of initialize, and of a 2026-07-28 request's `_meta`. */
export const clientInfoSchema = z.object({ name: clientLabel, version: clientLabel }).loose();

/**
 * How deeply a message may nest objects and arrays. JSON.parse takes any depth, but writing such a
 * value back (to store it, to measure it) overflows the stack: deeper messages are refused at once.
 */
export const maxJsonDepth = 64;

/** Whether a parsed JSON value nests deeper than the limit; iterative, so any depth is safe to check. */
export function nestsDeeperThan(value: unknown, limit: number): boolean {
  const pending: Array<[unknown, number]> = [[value, 1]];
  while (pending.length > 0) {
    const [current, depth] = pending.pop()!;
    if (typeof current !== 'object' || current === null) continue;
    if (depth > limit) return true;
    for (const child of Object.values(current)) pending.push([child, depth + 1]);
  }
  return false;
}

/** The most messages one 2025-03-26 batch may carry. */
export const maxBatchMessages = 50;

export const initializeParamsSchema = z.object({
  protocolVersion: z.string().max(64),
  capabilities: z
    .record(z.string(), z.unknown())
    .refine((capabilities) => JSON.stringify(capabilities).length <= clientInfoLimits.maxCapabilitiesBytes, {
      error: `must be at most ${clientInfoLimits.maxCapabilitiesBytes} bytes of JSON`,
    }),
  clientInfo: clientInfoSchema,
});

export const callToolParamsSchema = z.object({
  name: z.string().min(1),
  arguments: z.record(z.string(), z.unknown()).optional(),
  task: z.object({ ttl: z.number().nonnegative().optional() }).loose().optional(),
  _meta: meta.and(z.object({ progressToken: progressToken.optional() })).optional(),
});

export const taskIdParamsSchema = z.object({ taskId: z.string() });

export const listParamsSchema = z.object({ cursor: z.string().optional() });

/**
 * Checks the params of a list that is always one page (tools/list): no cursor was ever issued for it,
 * so a cursor is refused with -32602 rather than silently read as the first page.
 */
export function requireNoCursor(rawParams: unknown, method: string): void {
  const { cursor } = parseParams(listParamsSchema, rawParams);
  if (cursor !== undefined) {
    throw new RpcError(ErrorCode.InvalidParams, `Invalid params: cursor is not one this server issued; ${method} has a single page, so call it without a cursor`);
  }
}

export const setLevelParamsSchema = z.object({ level: z.enum(logLevels) });
