import packageJson from '@/package.json';
import { deleteEndedMcpSessions, deleteSessionMessagesOlderThan, endIdleMcpSessions, getMcpSessionById } from '@/db/queries/sessions';
import { getServerSecret } from '@/lib/auth/secret';
import { getEnv } from '@/lib/env';
import { abortRequestsInFlight, type McpContext } from '@/lib/mcp/handler';
import { followClientTask } from '@/lib/mcp/client-task-poller';
import { logTaskEnds } from '@/lib/mcp/observe';
import { clientLabel, forgetAnsweredCopies } from '@/lib/mcp/input-requests';
import { closeAllStreams } from '@/lib/mcp/sse';
import { SessionStreams } from '@/lib/mcp/session-streams';
import { createInProcessBus, topics, type EventBus } from '@/lib/tasks/bus';
import { createSharedBus } from '@/lib/tasks/shared-bus';
import { TaskEngine } from '@/lib/tasks/engine';

export interface Runtime {
  engine: TaskEngine;
  mcp: McpContext;
}

const globalForRuntime = globalThis as unknown as { __mcpTaskServerRuntime?: Runtime };

/** This process, among the instances that share a database. */
export const instanceId = crypto.randomUUID();

/**
 * The one engine of this process, wired to its tools, its bus and the MCP session streams. Created on
 * first use; creating it recovers tasks a previous process left behind and starts the TTL sweeper.
 * Kept on globalThis because Next.js may load this module once per route bundle.
 */
export function getRuntime(): Runtime {
  if (globalForRuntime.__mcpTaskServerRuntime) return globalForRuntime.__mcpTaskServerRuntime;
  const env = getEnv();
  // Instances that share a PostgreSQL database hear each other's changes; one process alone needs no more.
  const bus: EventBus = env.DATABASE_URL ? createSharedBus(instanceId) : createInProcessBus();
  const engine = new TaskEngine(
    {
      defaultTtlMs: env.TASK_DEFAULT_TTL_MS,
      maxTtlMs: env.TASK_MAX_TTL_MS,
      pollIntervalMs: env.TASK_POLL_INTERVAL_MS,
      pageSize: env.TASK_LIST_PAGE_SIZE,
      cursorSecret: getServerSecret(),
      maxActivePerUser: env.TASK_MAX_ACTIVE_PER_USER,
      maxStoredPerUser: env.TASK_MAX_STORED_PER_USER,
      appUrl: env.APP_URL,
    },
    bus,
  );
  const streams = new SessionStreams(bus, env.CALL_HEARTBEAT_MS);
  // What follows from a change (the session's status notification, the question relayed) is written once,
  // by the instance where the change happened.
  bus.subscribe(topics.allTasks, (event) => {
    if (!event.remote) streams.notifyTaskEvents(event);
  });
  logTaskEnds(bus);
  const runtime: Runtime = {
    engine,
    mcp: {
      engine,
      streams,
      appUrl: env.APP_URL,
      allowedOrigins: env.allowedOrigins,
      maxBodyBytes: env.MCP_MAX_BODY_BYTES,
      serverVersion: packageJson.version,
      heartbeatMs: env.CALL_HEARTBEAT_MS,
    },
  };
  globalForRuntime.__mcpTaskServerRuntime = runtime;

  // Recovery, then the first sweep, run in the background: getRuntime stays synchronous. On SQLite each
  // of their queries runs at once, so recovery is done before this process reads another request.
  recover(engine, streams)
    .catch((error: unknown) => console.error('Recovering interrupted tasks failed', error))
    .finally(() => sweep(engine, streams, env));
  setInterval(() => void sweep(engine, streams, env), env.TASK_SWEEP_INTERVAL_MS).unref();
  // Next.js shuts down gracefully, waiting for open responses; streams and long waits must end first.
  // Running tasks stop without a state change, so the next start resumes or fails them honestly.
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    process.once(signal, () => {
      engine.abortAll();
      abortRequestsInFlight();
      closeAllStreams();
    });
  }
  return runtime;
}

/** Run once at start: resumes or fails interrupted tasks, and follows again the client tasks that answer questions. */
async function recover(engine: TaskEngine, streams: SessionStreams): Promise<void> {
  const recovered = await engine.recoverInterruptedTasks();
  // Clients answering questions through tasks of their own are followed again.
  for (const { input, sessionId } of await engine.inputs.listFollowedByClientTasks()) {
    const session = sessionId ? await getMcpSessionById(sessionId) : undefined;
    if (!session || !input.clientTaskId) continue;
    followClientTask({
      engine,
      requests: streams.clientRequests,
      sessionId: session.id,
      userId: input.userId,
      inputId: input.id,
      clientTaskId: input.clientTaskId,
      stream: await streams.streamOfClientTask(session.id, input.clientTaskId),
      label: clientLabel(session),
    }).catch((error: unknown) => console.error(`Following the client's task ${JSON.stringify(input.clientTaskId)} failed`, error));
  }
  if (recovered.resumed + recovered.failed > 0) {
    console.log(`Tasks interrupted by the last shutdown: ${recovered.resumed} resumed, ${recovered.failed} failed.`);
  }
}

let sweeping = false;

/** Deletes expired tasks, old session messages and idle sessions; never rejects, and skips a turn while the last one runs. */
async function sweep(engine: TaskEngine, streams: SessionStreams, env: ReturnType<typeof getEnv>): Promise<void> {
  if (sweeping) return;
  sweeping = true;
  try {
    await engine.sweepExpiredTasks();
    await deleteSessionMessagesOlderThan(Date.now() - env.SESSION_MESSAGE_RETENTION_MS);
    for (const sessionId of await endIdleMcpSessions(Date.now() - env.SESSION_IDLE_TIMEOUT_MS, streams.openSessionIds())) forgetAnsweredCopies(sessionId);
    await deleteEndedMcpSessions();
  } catch (error) {
    console.error('TTL sweep failed', error);
  } finally {
    sweeping = false;
  }
}
