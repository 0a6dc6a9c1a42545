import packageJson from '@/package.json';
import { deleteEndedMcpSessions, deleteSessionMessagesOlderThan, endIdleMcpSessions, getMcpSessionById } from '@/db/queries/sessions';
import { getServerSecret, leaveInstances } from '@/lib/auth/secret';
import { getEnv } from '@/lib/env';
import { instanceId } from '@/lib/instance';
import { deleteLapsedStreamPlaces, giveBackStreamPlaces, renewStreamPlaces, sessionsWithStreamOpen, streamPlaceRenewalMs, streamPlaceTtlMs } from '@/lib/mcp/http/caps';
import type { McpContext } from '@/lib/mcp/core/context';
import { answerWindowFor } from '@/lib/mcp/core/long-calls';
import { abortRequestsInFlight } from '@/lib/mcp/http/in-flight';
import { followClientTask } from '@/lib/mcp/legacy/client-task-poller';
import { logTaskEnds } from '@/lib/mcp/http/observe';
import { canReceive, clientLabel, forgetAnsweredCopies } from '@/lib/mcp/legacy/input-requests';
import { closeAllStreams } from '@/lib/mcp/http/sse';
import { SessionStreams } from '@/lib/mcp/legacy/session-streams';
import { createInProcessBus, topics, type EventBus } from '@/lib/tasks/bus';
import { createSharedBus } from '@/lib/tasks/shared-bus';
import { TaskEngine } from '@/lib/tasks/engine';
import type { MailSender } from '@/lib/notify/mail';
import { Notifier } from '@/lib/notify/notifier';
import { getVapidKeys } from '@/lib/notify/vapid';
import { deleteOldNotificationEvents } from '@/db/queries/notifications';
import { createTransport } from 'nodemailer';
import { storageHealth } from '@/lib/storage/health';
import { restoreRemovedDatabase } from '@/lib/storage/restore';
import { onToolsChanged } from '@/lib/tools/catalogue';
import { loadServersFile } from '@/lib/upstreams/config';
import { startUpstreams, stopUpstreams } from '@/lib/upstreams';

export interface Runtime {
  engine: TaskEngine;
  mcp: McpContext;
  notifier: Notifier;
  /** The SMTP transport and sender (with SMTP_URL set): notifications, and the links that prove addresses. */
  mail?: MailSender;
}

const globalForRuntime = globalThis as unknown as { __mcpTaskServerRuntime?: Runtime };

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
      instanceId,
      leaseMs: env.TASK_LEASE_MS,
      clientCanSample: async (task) => {
        if (!task.sessionId) return true;
        const session = await getMcpSessionById(task.sessionId);
        return session !== undefined && canReceive(session, 'sampling');
      },
    },
    bus,
  );
  const streams = new SessionStreams(bus, (taskId) => engine.taskPageUrl(taskId), env.CALL_HEARTBEAT_MS);
  // What follows from a change (the session's status notification, the question relayed) is written once,
  // by the instance where the change happened.
  bus.subscribe(topics.allTasks, (event) => {
    if (!event.remote) streams.notifyTaskEvents(event);
  });
  logTaskEnds(bus);
  const mail: MailSender | undefined = env.SMTP_URL
    ? {
        transport: createTransport({ url: env.SMTP_URL, connectionTimeout: env.WEBHOOK_TIMEOUT_MS, greetingTimeout: env.WEBHOOK_TIMEOUT_MS, socketTimeout: env.WEBHOOK_TIMEOUT_MS }),
        from: env.SMTP_FROM ?? `MCP Task Server <notifications@${new URL(env.APP_URL).hostname}>`,
      }
    : undefined;
  const notifier = new Notifier(
    {
      instanceId,
      appUrl: env.APP_URL,
      privateHosts: env.notifyPrivateHosts,
      webhookTimeoutMs: env.WEBHOOK_TIMEOUT_MS,
      retryBaseMs: env.NOTIFY_RETRY_BASE_MS,
      retryWindowMs: env.NOTIFY_RETRY_WINDOW_MS,
      maxPerMinute: env.NOTIFY_MAX_PER_MINUTE,
      alone: !env.DATABASE_URL,
      liveSessions: async (sessionIds) => {
        const open = new Set(await sessionsWithStreamOpen(streams.openSessionIds()));
        return sessionIds.filter((id) => open.has(id));
      },
      vapid: { subject: env.VAPID_SUBJECT ?? env.APP_URL.replace(/^http:/, 'https:'), ...getVapidKeys() },
      mail,
    },
    bus,
  );
  const runtime: Runtime = {
    engine,
    notifier,
    mail,
    mcp: {
      engine,
      streams,
      appUrl: env.APP_URL,
      allowedOrigins: env.allowedOrigins,
      maxBodyBytes: env.MCP_MAX_BODY_BYTES,
      serverVersion: packageJson.version,
      heartbeatMs: env.CALL_HEARTBEAT_MS,
      roundWaitMs: env.MCP_ROUND_WAIT_MS,
      answerWithinMs: (clientName) => answerWindowFor(clientName, env.CALL_ANSWER_WITHIN_MS_BY_CLIENT, env.CALL_ANSWER_WITHIN_MS),
    },
  };
  globalForRuntime.__mcpTaskServerRuntime = runtime;

  // Recovery, then the first sweep, run in the background: getRuntime stays synchronous. On SQLite each
  // of their queries runs at once, so recovery is done before this process reads another request.
  // One process alone on its SQLite file takes every task a previous process left; instances sharing
  // PostgreSQL take only the tasks whose lease ran out (or was handed back).
  const everyActive = !env.DATABASE_URL;
  // The servers of the servers file come up first (or fail their first attempt): an interrupted task of
  // one of their tools is resumed or failed only once its tool is known. npm start has checked the file.
  const upstreamsStarted = env.MCP_SERVERS_FILE ? startUpstreams(loadServersFile(env.MCP_SERVERS_FILE)) : Promise.resolve();
  // Sessions that keep a stream open hear when the tools change (an upstream server came up, went down or changed its list).
  onToolsChanged(debounced(250, () => {
    for (const sessionId of streams.openSessionIds()) streams.deliver(sessionId, { jsonrpc: '2.0', method: 'notifications/tools/list_changed' });
  }));
  upstreamsStarted
    .then(() => recover(engine, streams, everyActive))
    .catch((error: unknown) => console.error('Recovering interrupted tasks failed', error))
    .finally(() => sweep(engine, streams, env));
  setInterval(() => void sweep(engine, streams, env), env.TASK_SWEEP_INTERVAL_MS).unref();
  if (env.DATABASE_URL) {
    const leases = new Leases(engine, env.TASK_LEASE_MS);
    setInterval(() => leases.renew(), env.TASK_LEASE_MS / 3).unref();
    void upstreamsStarted.then(() => setInterval(() => leases.takeOver(), Math.min(2_000, env.TASK_LEASE_MS / 2)).unref());
    // Another instance that is stopping handed its tasks back: take them now, not at the next scan.
    bus.subscribe(topics.leases, (event) => {
      if (event.remote) leases.takeOver();
    });
  }
  // Storage looked at twice a minute: free space falling below STORAGE_WARN_FREE_MB is said in the log (and the dashboard).
  setInterval(() => void storageHealth().report().catch(() => {}), 30_000).unref();
  // A database file deleted or moved under the server is put back from the open connection.
  if (!env.DATABASE_URL) setInterval(() => void restoreRemovedDatabase(), 5_000).unref();
  // Instances sharing PostgreSQL count their streams together, in rows that lapse unless renewed.
  if (env.DATABASE_URL) setInterval(renewPlaces, streamPlaceRenewalMs).unref();
  // Next.js shuts down gracefully, waiting for open responses; streams and long waits must end first.
  // Running tasks stop without a state change and are handed back: another instance (or the next start)
  // resumes or fails them honestly. The places of this instance's streams are given back with them, and
  // it leaves the running instances, so that a change of AUTH_SECRET need not wait for its row to lapse.
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    process.once(signal, () => {
      handingOver ??= Promise.all([
        engine.handOver().catch((error: unknown) => console.error('Handing tasks over failed; they are taken over when their leases run out', error)),
        giveBackStreamPlaces().catch((error: unknown) =>
          console.error(`Giving back the places of this instance's streams failed; they stop counting within ${streamPlaceTtlMs / 1000} s`, error),
        ),
        leaveInstances().catch((error: unknown) =>
          console.error(`Removing this instance from the running ones failed; it stops counting within ${env.TASK_LEASE_MS / 1000} s`, error),
        ),
      ]).then(() => {});
      notifier.stop();
      void stopUpstreams();
      abortRequestsInFlight();
      closeAllStreams();
    });
  }
  return runtime;
}

let handingOver: Promise<void> | undefined;

/**
 * Resolves once this process has handed its running tasks and its streams' places back (at SIGTERM); at
 * once when it has not begun.
 */
export function tasksHandedOver(): Promise<void> {
  return handingOver ?? Promise.resolve();
}

/**
 * Renews this instance's leases and takes over expired ones (instances sharing PostgreSQL; one process
 * on SQLite takes every task at start instead); each never overlaps itself, and never rejects.
 */
class Leases {
  private renewing = false;
  private taking: Promise<void> | undefined;
  private again = false;
  /** When this instance last failed to reach the database over leases. */
  private failedAt = -Infinity;

  constructor(
    private readonly engine: TaskEngine,
    private readonly leaseMs: number,
  ) {}

  renew(): void {
    if (this.renewing || handingOver) return;
    this.renewing = true;
    this.engine
      .renewLeases()
      .catch((error: unknown) => {
        this.failedAt = Date.now();
        console.error('Renewing task leases failed', error);
      })
      .finally(() => (this.renewing = false));
  }

  takeOver(): void {
    if (handingOver) return;
    // After the database was out of reach, every instance's leases may have run out while their runners
    // lived: give them one lease to renew before taking any task over.
    if (Date.now() - this.failedAt < this.leaseMs) return;
    if (this.taking) {
      this.again = true;
      return;
    }
    this.taking = this.engine
      .recoverInterruptedTasks()
      .then((taken) => {
        if (taken.resumed + taken.failed > 0) console.log(`Tasks taken over from a stopped instance: ${taken.resumed} resumed, ${taken.failed} failed.`);
      })
      .catch((error: unknown) => {
        this.failedAt = Date.now();
        console.error('Taking over tasks failed', error);
      })
      .finally(() => {
        this.taking = undefined;
        if (this.again) {
          this.again = false;
          this.takeOver();
        }
      });
  }
}

let renewingPlaces = false;

/** Renews the places of this instance's streams; never overlaps itself, never rejects, stops at SIGTERM. */
function renewPlaces(): void {
  if (renewingPlaces || handingOver) return;
  renewingPlaces = true;
  renewStreamPlaces()
    .catch((error: unknown) => console.error("Renewing the places of this instance's streams failed", error))
    .finally(() => (renewingPlaces = false));
}

/** Run once at start: resumes or fails interrupted tasks, and follows again the client tasks that answer questions. */
async function recover(engine: TaskEngine, streams: SessionStreams, everyActive: boolean): Promise<void> {
  const recovered = await engine.recoverInterruptedTasks(everyActive);
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

/**
 * Deletes expired tasks, old session messages, idle sessions (none with a stream open on any instance) and
 * the stream places of instances that died; never rejects, and skips a turn while the last one runs.
 */
async function sweep(engine: TaskEngine, streams: SessionStreams, env: ReturnType<typeof getEnv>): Promise<void> {
  if (sweeping) return;
  sweeping = true;
  try {
    await engine.sweepExpiredTasks();
    await deleteSessionMessagesOlderThan(Date.now() - env.SESSION_MESSAGE_RETENTION_MS);
    const inUse = await sessionsWithStreamOpen(streams.openSessionIds());
    for (const sessionId of await endIdleMcpSessions(Date.now() - env.SESSION_IDLE_TIMEOUT_MS, inUse)) forgetAnsweredCopies(sessionId);
    await deleteEndedMcpSessions();
    await deleteLapsedStreamPlaces();
    await deleteOldNotificationEvents(Date.now() - env.NOTIFY_EVENT_RETENTION_MS);
  } catch (error) {
    console.error('TTL sweep failed', error);
  } finally {
    sweeping = false;
  }
}

/** Calls `work` once things have been quiet for `ms` (several changes at once make one notification). */
function debounced(ms: number, work: () => void): () => void {
  let timer: NodeJS.Timeout | undefined;
  return () => {
    clearTimeout(timer);
    timer = setTimeout(work, ms);
    timer.unref();
  };
}
