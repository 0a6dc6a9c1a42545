import { randomUUID } from 'node:crypto';
import { ErrorCode, RpcError } from '../core/errors';
import type { JsonRpcResponse } from '../core/schema';

type Pending = { resolve: (result: Record<string, unknown>) => void; reject: (error: Error) => void; timer: ReturnType<typeof setTimeout> };

const idPrefix = 'client:';

/**
 * Requests this server sends to a client outside any question (tasks/get, tasks/result, tasks/cancel on
 * the client's own tasks), matched to the client's responses by id.
 */
export class ClientRequests {
  private readonly pending = new Map<string, Pending>();

  /** `deliver` stores the request for the session's stream, and rejects when it cannot. */
  constructor(private readonly deliver: (sessionId: string, message: Record<string, unknown>, stream: string | null) => Promise<void>) {}

  /** Sends on one of the session's streams: its GET stream (null), or the response stream the matter began on. */
  send(
    sessionId: string,
    method: string,
    params: Record<string, unknown>,
    stream: string | null = null,
    timeoutMs = 30_000,
  ): Promise<Record<string, unknown>> {
    const id = `${idPrefix}${randomUUID()}`;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new Error(`The client did not answer ${method} within ${timeoutMs} ms`));
      }, timeoutMs);
      timer.unref?.();
      this.pending.set(id, { resolve, reject, timer });
      // A request that could not be sent fails at once rather than at its timeout.
      this.deliver(sessionId, { jsonrpc: '2.0', id, method, params }, stream).catch((error: unknown) => {
        if (!this.pending.delete(id)) return;
        clearTimeout(timer);
        reject(error instanceof Error ? error : new Error(String(error)));
      });
    });
  }

  /**
   * Sends a request whose answer nobody waits for (the client's reply is taken and dropped); resolves
   * once it is stored for the stream, so that what is sent after it comes after it.
   */
  post(sessionId: string, method: string, params: Record<string, unknown>, stream: string | null = null): Promise<void> {
    return this.deliver(sessionId, { jsonrpc: '2.0', id: `${idPrefix}${randomUUID()}`, method, params }, stream);
  }

  /** Settles the request a response answers; false when the response is not for one of these. */
  settle(message: JsonRpcResponse): boolean {
    if (typeof message.id !== 'string' || !message.id.startsWith(idPrefix)) return false;
    const waiting = this.pending.get(message.id);
    if (!waiting) return true;
    this.pending.delete(message.id);
    clearTimeout(waiting.timer);
    if ('result' in message) waiting.resolve(message.result);
    else waiting.reject(new RpcError(message.error.code ?? ErrorCode.InternalError, message.error.message));
    return true;
  }
}
