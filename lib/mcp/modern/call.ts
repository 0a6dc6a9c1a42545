import type { TaskEngine } from '@/lib/tasks/engine';
import type { RequestId } from '../core/schema';
import type { StreamOutlet } from '../core/tool-calls';
import type { ModernClient } from './protocol';

/** What a 2026-07-28 method handler gets besides its params: everything comes with the request itself. */
export interface ModernCall extends StreamOutlet {
  engine: TaskEngine;
  userId: string;
  tokenId: string;
  client: ModernClient;
  requestId: RequestId;
  /** Aborts when the client closes the response (its way of cancelling) or the server stops. */
  signal: AbortSignal;
  serverVersion: string;
  /** How long a plain call waits for its task before answering with a requestState to retry with. */
  roundWaitMs: number;
  /** Turns the response into an SSE stream now, for a wait whose progress the client asked to see. */
  openStream(): void;
  /**
   * Counts this request against MCP_MAX_STREAMS_PER_USER until its response ends, for a request about to
   * wait (a long poll holds a connection as a stream does); throws the 429 refusal at the cap.
   */
  holdStreamPlace(): Promise<void>;
}

export type ModernMethod = (params: unknown, call: ModernCall) => Promise<Record<string, unknown>>;
