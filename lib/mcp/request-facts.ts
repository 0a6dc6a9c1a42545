import { readBodyWithLimit } from './http';

/** The parts of a POSTed JSON-RPC message that the rate limits and the request log look at. */
export interface MessageSummary {
  /** The method of a request or notification; undefined for a response or unreadable JSON. */
  method?: string;
  /** The JSON-RPC id as the client sent it. */
  id?: unknown;
  taskId?: string;
  tool?: string;
  /** A tools/call that asks to run as a task. */
  asTask: boolean;
  /** Set for a batch (2025-03-26): how many messages it holds. */
  batchSize?: number;
}

/** Who sent a request, once the handler has checked the token. */
export interface RequestCaller {
  userId: string;
  tokenId: string;
}

interface RequestFacts {
  message: Promise<MessageSummary | undefined>;
  caller?: RequestCaller;
}

/** Kept per Request object, so nothing outlives the request it describes. */
const factsByRequest = new WeakMap<Request, RequestFacts>();

const asString = (value: unknown) => (typeof value === 'string' ? value : undefined);

function summarize(value: unknown): MessageSummary | undefined {
  if (Array.isArray(value)) return { asTask: false, batchSize: value.length };
  if (typeof value !== 'object' || value === null) return undefined;
  const message = value as Record<string, unknown>;
  const params = typeof message.params === 'object' && message.params !== null ? (message.params as Record<string, unknown>) : {};
  const method = asString(message.method);
  return {
    method,
    id: message.id,
    taskId: asString(params.taskId),
    tool: method === 'tools/call' ? asString(params.name) : undefined,
    asTask: method === 'tools/call' && params.task !== undefined,
  };
}

/**
 * Starts reading a POST body beside the handler (from a clone, within the same size limit), so that
 * limits and the log know the method without the handler passing it on.
 */
export function trackRequest(request: Request, maxBodyBytes: number): void {
  const message =
    request.method === 'POST' && request.body
      ? readBodyWithLimit(request.clone(), maxBodyBytes)
          .then((body) => summarize(JSON.parse(body)))
          .catch(() => undefined)
      : Promise.resolve(undefined);
  factsByRequest.set(request, { message });
}

/** The summary of a tracked request's message; undefined when it was not tracked or not readable. */
export function messageOf(request: Request): Promise<MessageSummary | undefined> {
  return factsByRequest.get(request)?.message ?? Promise.resolve(undefined);
}

export function noteCaller(request: Request, caller: RequestCaller): void {
  const facts = factsByRequest.get(request);
  if (facts) facts.caller = caller;
}

export function callerOf(request: Request): RequestCaller | undefined {
  return factsByRequest.get(request)?.caller;
}
