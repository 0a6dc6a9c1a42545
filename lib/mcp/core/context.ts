import type { TaskEngine } from '@/lib/tasks/engine';
import type { SessionStreams } from '../legacy/session-streams';

/**
 * What the MCP endpoint is given to serve with, handed on to both protocol eras. It lives apart from
 * the endpoint so that the eras can name it without importing the endpoint that imports them.
 */
export interface McpContext {
  engine: TaskEngine;
  streams: SessionStreams;
  appUrl: string;
  allowedOrigins: string[];
  maxBodyBytes: number;
  serverVersion: string;
  /**
   * The longest a plain call's stream stays silent: notifications/progress when the client gave a
   * progressToken (client timeouts that reset on progress must not fire), an SSE comment otherwise.
   */
  heartbeatMs: number;
  /**
   * How long a 2026-07-28 plain call waits for its task in one round before answering input_required with
   * a requestState to retry with (a long poll that stays under common proxy and client timeouts).
   */
  roundWaitMs: number;
  /**
   * How long a client without tasks is left waiting for a plain call before it is answered "still
   * running" (0: until the task ends), by the clientInfo.name it gave: below its own request timeout.
   */
  answerWithinMs(clientName: string | null | undefined): number;
}

/** Who is calling, and with which token: known once the endpoint has checked the bearer token. */
export interface Caller {
  userId: string;
  tokenId: string;
}
