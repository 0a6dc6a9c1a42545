import {
  claimTaskLeases,
  countTasksByStatusForUser,
  deleteExpiredTasks,
  endTaskUnheard,
  getCallTaskByRequestId,
  releaseCallTask,
  getTaskById,
  getTaskByIdForUser,
  getTaskStatusByIdForUser,
  incrementTaskAttempt,
  setTaskUpstream,
  insertTaskWithinLimits,
  listTaskEventsByTaskId,
  listTasksByUserId,
  releaseTaskLeases,
  renewTaskLeases,
  storeTasksProgress,
  transitionTask,
  updateTaskProgress,
  type TaskEventRow,
  type TaskFilter,
  type TaskRow,
  type TaskListRow,
  type TaskStatusRow,
  type TaskTransition,
} from '@/db/queries/tasks';
import { withdrawPendingTaskInputs, type TaskInputRow } from '@/db/queries/inputs';
import { storageTroubleOf } from '@/db/errors';
import { inTransaction } from '@/db/run';
import { persistently } from '@/lib/storage/persist';
import {
  executeTool,
  HandedOver,
  ToolProtocolError,
  type CallToolResult,
  type ElicitAnswer,
  type ToolContext,
  type ToolDefinition,
} from '@/lib/tools/define';
import { findTool } from '@/lib/tools/catalogue';
import { publishTaskEvent, topics, type BusEvent, type EventBus } from './bus';
import { decodeCursor, encodeCursor } from './cursor';
import { describeFields } from './elicitation';
import { TaskInputs } from './inputs';
import { CoalescedProgress, ProgressWrites } from './progress';
import { waitFor, type WaitSignal } from './wait';
import { newTaskId } from './task-ids';
import { activeStatuses, isTerminal, statusesLeadingTo, type TaskStatus } from './states';

export type { TaskEventRow, TaskFilter, TaskListRow, TaskRow, TaskStatusRow };

export interface EngineConfig {
  defaultTtlMs: number;
  maxTtlMs: number;
  pollIntervalMs: number;
  pageSize: number;
  cursorSecret: string;
  /** How many working or waiting tasks one user may have at once. */
  maxActivePerUser: number;
  /** Stored tasks per user, ended ones included: what bounds the database, whatever the ttl. */
  maxStoredPerUser: number;
  /** The public URL of the dashboard, where a task's questions can be answered. */
  appUrl: string;
  /** This process among the instances that share the database: the runner its leases name. */
  instanceId: string;
  /** How long a lease holds without renewal: how soon another instance takes over the tasks of a dead one. */
  leaseMs: number;
  /**
   * Whether the task's client can be asked for a completion by its model (a 2025-11-25 session that
   * declared sampling; a 2026-07-28 client is asked when it polls). A request for one from a client that
   * cannot is refused at once rather than left waiting.
   */
  clientCanSample?(task: TaskRow): Promise<boolean>;
}

/** How often a running task's progress is written; every report is published on the bus at once. */
const progressWriteIntervalMs = 1000;

/**
 * Events that change neither a task's status nor its questions (status messages are task-changed events
 * without a transition): a task's waiters have nothing to do for them.
 */
const passingEvents = new Set<BusEvent['type']>(['task-progress', 'task-log', 'task-stream-close']);
const mayEndTask = (event: BusEvent) => !passingEvents.has(event.type) && !(event.type === 'task-changed' && !event.transition);

/** Leases renewed in one statement at most (a process may run thousands of tasks). */
const leaseBatch = 5_000;

/** At most this many outcomes wait in memory for storage to take them. */
const maxOutcomesWaiting = 1_000;

/** A task keeps the latest this many characters of its partial output. */
const partialOutputChars = 64 * 1024;
const truncationMark = '…\n';

/**
 * A tool's own words as a task keeps them (its progress, status, output and failure): U+FFFD for what
 * no database here holds as text, U+0000 (PostgreSQL refuses it) and lone surrogates (its JSON refuses
 * them; SQLite would keep their bytes, which read back as garbage).
 */
const storableText = (text: string): string =>
  // Most text needs no change: checked without copying it (a progress message comes twice a second from each of thousands of tasks).
  text.isWellFormed() && !text.includes('\u0000') ? text : text.toWellFormed().replaceAll('\u0000', '\uFFFD');

/** The output with `text` added, its start dropped (and marked) once it grows past the bound. */
function appendOutput(output: string | null, text: string): string {
  const whole = (output ?? '') + text;
  return whole.length <= partialOutputChars ? whole : truncationMark + whole.slice(whole.length - partialOutputChars + truncationMark.length);
}

/** A shorter ttl would let a task expire before a client could poll it even once. */
export const minTtlMs = 1000;

/** Why a task operation was refused; the protocol layer and the dashboard word it for their users. */
export class TaskError extends Error {
  override name = 'TaskError';
  constructor(
    readonly reason: 'not_found' | 'expired' | 'terminal' | 'bad_cursor' | 'limit',
    message: string,
    readonly status?: TaskStatus,
  ) {
    super(message);
  }
}

/** A task the caller may see: theirs (the same error as for none, so that ids cannot be probed) and not expired. */
function live<T extends { expiresAt: number }>(row: T | undefined): T {
  if (!row) throw new TaskError('not_found', 'Task not found');
  if (row.expiresAt <= Date.now()) throw new TaskError('expired', 'Task has expired');
  return row;
}

export function isTaskError(error: unknown): error is TaskError {
  return error instanceof Error && error.name === 'TaskError' && typeof (error as TaskError).reason === 'string';
}

/** Who caused a change, kept in the task's timeline. */
export type Actor = 'client' | 'dashboard' | 'system';

export interface NewTask {
  userId: string;
  sessionId: string | null;
  client: { name: string | null; version: string | null };
  /** The protocol revision the client spoke, shown beside the client in the dashboard. */
  protocolVersion: string | null;
  tool: ToolDefinition;
  args: Record<string, unknown>;
  requestedTtlMs?: number;
  progressToken?: string | number;
  /** The JSON-RPC id of the plain tools/call this task answers; absent for a task-augmented call. */
  callRequestId?: string | number;
}

const restartMessage = 'The server restarted before this task finished, and this tool cannot resume.';

/**
 * The task engine: every state change goes through one conditional UPDATE, and every change is
 * published on the bus, once committed, so that waiters, streams and dashboards wake at once. Every
 * method that reads or writes the database is async.
 */
export class TaskEngine {
  private readonly running = new Map<string, AbortController>();
  /** Outcomes kept in memory until storage takes them. */
  private outcomesWaiting = 0;
  /** Running tasks' progress, written together once per turn of the event loop. */
  private readonly progressWrites = new ProgressWrites((rows) => storeTasksProgress(rows, Date.now()));
  readonly inputs: TaskInputs;

  constructor(
    private readonly config: EngineConfig,
    readonly bus: EventBus,
  ) {
    this.inputs = new TaskInputs(bus, (taskId) => this.taskPageUrl(taskId));
  }

  /**
   * The dashboard's page of a task, where its person can answer whatever client started it. Built from
   * APP_URL alone: a request's Host may name anything.
   */
  taskPageUrl(taskId: string): string {
    return `${this.config.appUrl}/tasks/${encodeURIComponent(taskId)}`;
  }

  /** Commits the task, starts its work, and resolves with the committed row. */
  async createTask(input: NewTask): Promise<TaskRow> {
    const now = Date.now();
    const requested =
      input.requestedTtlMs ?? this.config.defaultTtlMs + (input.callRequestId !== undefined ? (input.tool.maxRunMs ?? 0) : 0);
    // The receiver may override the requested ttl: work that waits for a person gets the time it needs.
    const wanted = Math.max(requested, input.tool.minTtlMs ?? 0);
    const ttlMs = Math.round(Math.max(minTtlMs, Math.min(wanted, this.config.maxTtlMs)));
    const inserted = await insertTaskWithinLimits(
      {
        id: newTaskId(now),
        userId: input.userId,
        sessionId: input.sessionId,
        clientName: input.client.name,
        clientVersion: input.client.version,
        protocolVersion: input.protocolVersion,
        toolName: input.tool.name,
        // Arguments that do not fit the tool fail the task at once (the run says why): they are not kept.
        arguments: input.tool.inputSchema.safeParse(input.args).success ? input.args : {},
        status: 'working',
        statusMessage: 'The task is working.',
        createdAt: now,
        ttlMs,
        expiresAt: now + ttlMs,
        pollIntervalMs: this.config.pollIntervalMs,
        progressToken: input.progressToken ?? null,
        invocation: input.callRequestId !== undefined ? 'call' : 'task',
        callRequestId: input.callRequestId ?? null,
        runner: this.config.instanceId,
        leaseExpiresAt: now + this.config.leaseMs,
      },
      'client',
      { maxActive: this.config.maxActivePerUser, maxStored: this.config.maxStoredPerUser },
    );
    if ('refused' in inserted) {
      throw new TaskError(
        'limit',
        inserted.refused === 'active'
          ? `Too many active tasks: you have ${inserted.count} working or waiting for input (the limit is ${this.config.maxActivePerUser}); cancel some or wait for them to finish`
          : `Too many stored tasks: you have ${inserted.count} (the limit is ${this.config.maxStoredPerUser}); they are deleted when their ttl ends`,
      );
    }
    const row = inserted.task;
    // Creation is not a transition: the client learns of the task from CreateTaskResult itself.
    this.announce(row, false);
    this.run({ ...row, arguments: input.args }, input.tool);
    return row;
  }

  /** The caller's task; another user's task is reported exactly like one that does not exist. */
  async getTask(taskId: string, userId: string): Promise<TaskRow> {
    return live(await getTaskByIdForUser(taskId, userId));
  }

  /** The task's state without its arguments or result: what a client polling tasks/get reads. */
  async getTaskStatus(taskId: string, userId: string): Promise<TaskStatusRow> {
    return live(await getTaskStatusByIdForUser(taskId, userId));
  }

  async listTasks(
    userId: string,
    cursor?: string,
    options: { pageSize?: number; filter?: TaskFilter } = {},
  ): Promise<{ tasks: TaskListRow[]; nextCursor?: string }> {
    const pageSize = options.pageSize ?? this.config.pageSize;
    let before: { createdAt: number; id: string } | undefined;
    if (cursor !== undefined) {
      before = decodeCursor(cursor, userId, this.config.cursorSecret) ?? undefined;
      if (!before) throw new TaskError('bad_cursor', 'Invalid cursor');
    }
    // One extra row tells whether another page exists without a second query.
    const rows = await listTasksByUserId(userId, { limit: pageSize + 1, before, notExpiredAt: Date.now(), filter: options.filter });
    const page = rows.slice(0, pageSize);
    const last = page.at(-1);
    const nextCursor =
      rows.length > pageSize && last
        ? encodeCursor({ createdAt: last.createdAt, id: last.id }, userId, this.config.cursorSecret)
        : undefined;
    return { tasks: page, nextCursor };
  }

  /** The task's transitions, oldest first: the dashboard's timeline. */
  async getTimeline(taskId: string, userId: string): Promise<TaskEventRow[]> {
    await this.getTask(taskId, userId);
    return await listTaskEventsByTaskId(taskId);
  }

  countByStatus(userId: string): Promise<Partial<Record<TaskStatus, number>>> {
    return countTasksByStatusForUser(userId, Date.now());
  }

  /**
   * Moves the task to cancelled (and withdraws its open questions) in one transaction, then aborts its
   * work; resolves with the cancelled task.
   */
  async cancelTask(taskId: string, userId: string, actor: Actor): Promise<TaskRow> {
    const outcome = await inTransaction(function* (q) {
      const current = live(yield* getTaskByIdForUser.program(q, taskId, userId));
      const cancelled = yield* transitionTask.program(q, current.id, {
        from: statusesLeadingTo('cancelled'),
        to: 'cancelled',
        statusMessage: actor === 'dashboard' ? 'The task was cancelled from the dashboard.' : 'The task was cancelled by request.',
        actor,
      });
      if (!cancelled) return { ok: false as const, stored: yield* getTaskById.program(q, taskId) };
      return { ok: true as const, cancelled, withdrawn: yield* withdrawPendingTaskInputs.program(q, taskId) };
    });
    if (!outcome.ok) {
      const now = outcome.stored;
      if (!now) throw new TaskError('not_found', 'Task not found');
      throw new TaskError('terminal', `Cannot cancel task: already in terminal status '${now.status}'`, now.status);
    }
    const { cancelled, withdrawn } = outcome;
    this.running.get(taskId)?.abort(new Error('Task cancelled'));
    this.announce(cancelled, true);
    this.inputs.announceWithdrawn(withdrawn);
    return cancelled;
  }

  /**
   * The client of a plain tools/call stopped it: cancelled, the task it started is cancelled; gone on its
   * own timeout, the task goes on (for the dashboard and task_result). Resolves with false when the call
   * started no task, no longer answers for one, or its task has ended already.
   */
  async stopCallTask(sessionId: string, requestId: string | number, userId: string, why: 'cancelled' | 'client-timeout'): Promise<boolean> {
    const task = await getCallTaskByRequestId(sessionId, requestId, userId);
    if (!task || isTerminal(task.status)) return false;
    if (why === 'client-timeout') {
      await this.releaseCall(task.id, userId, why);
      return true;
    }
    try {
      await this.cancelTask(task.id, userId, 'client');
      return true;
    } catch (error) {
      if (isTaskError(error)) return false;
      throw error;
    }
  }

  /**
   * The plain call that started the task no longer waits for it (answered early, or its client gave up
   * on its own timeout): cancelling that call cancels nothing from now on, and the timeline says why.
   */
  async releaseCall(taskId: string, userId: string, why: 'answered' | 'client-timeout'): Promise<void> {
    const statusMessage =
      why === 'answered'
        ? 'The call was answered before the task ended; the task goes on, and its client can fetch the result with task_result.'
        : 'The client stopped waiting for the call (its own timeout); the task goes on.';
    await releaseCallTask(taskId, userId, { statusMessage, actor: why === 'answered' ? 'system' : 'client' });
  }

  /**
   * Resolves with the task once it is terminal; woken by the bus, never by a polling loop. `onWake` sees
   * the task as stored at the start and after every transition or question until then (a promise it
   * returns is awaited before the wait goes on, and its rejection ends the wait); `onProgress` sees every
   * progress report as it is made (progress is stored only about once a second), synchronously.
   */
  waitForTerminal(
    taskId: string,
    userId: string,
    signal?: WaitSignal,
    onWake?: (task: TaskRow) => void | Promise<void>,
    onProgress?: (task: TaskRow) => void,
  ): Promise<TaskRow> {
    const unsubscribe = onProgress
      ? this.bus.subscribe(topics.task(taskId), (event) => {
          if (event.type === 'task-progress') onProgress(event.task);
        })
      : undefined;
    // Not an async function of its own: thousands of tasks/result calls wait here at once, and each
    // suspended frame holds its registers.
    const ended = waitFor(
      this.bus,
      topics.task(taskId),
      async () => {
        const row = await this.getTask(taskId, userId);
        if (isTerminal(row.status)) return row;
        await onWake?.(row);
        return undefined;
      },
      signal,
      mayEndTask,
    );
    return unsubscribe ? ended.finally(unsubscribe) : ended;
  }

  /** Run once at start: resumes what can be resumed and honestly fails the rest. */
  async recoverInterruptedTasks(everyActive = false): Promise<{ resumed: number; failed: number }> {
    let resumed = 0;
    let failed = 0;
    const now = Date.now();
    for (const row of await claimTaskLeases(this.config.instanceId, now, now + this.config.leaseMs, everyActive)) {
      if (this.running.has(row.id)) continue;
      const tool = findTool(row.toolName);
      // A task whose work goes on in an upstream task is followed there, whatever its tool; one that waits
      // for a person's approval has done nothing yet that it would repeat, and waits again.
      if (tool && (tool.resumable || row.upstreamTaskId || (await this.waitsForApproval(row)))) {
        const updated = await inTransaction(function* (q) {
          yield* incrementTaskAttempt.program(q, row.id);
          // A task waiting for input keeps its question (and status); the tool finds it again by key.
          return row.status === 'working' ? yield* updateTaskProgress.program(q, row.id, { statusMessage: 'Resumed after a server restart.' }) : row;
        });
        if (updated) {
          this.announce(updated, false);
          this.run(updated, tool, {
            progress: updated.progress,
            ...(row.upstreamTaskId ? { upstream: { taskId: row.upstreamTaskId, sessionId: row.upstreamSessionId } } : {}),
          });
          resumed += 1;
        }
        continue;
      }
      const interrupted = tool?.interruptedMessage ?? restartMessage;
      const { ended, withdrawn } = await endTask(row.id, {
        from: activeStatuses,
        to: 'failed',
        statusMessage: interrupted,
        actor: 'system',
        error: { code: -32603, message: `Internal error: ${interrupted}` },
      });
      if (ended) {
        this.announce(ended, true);
        this.inputs.announceWithdrawn(withdrawn);
        failed += 1;
      }
    }
    return { resumed, failed };
  }

  /** Whether the task waits for approvals and for nothing else (a tool asks for approval before it acts). */
  private async waitsForApproval(row: TaskRow): Promise<boolean> {
    if (row.status !== 'input_required') return false;
    const open = (await this.inputs.listForTask(row.id)).filter((input) => input.status === 'pending');
    return open.length > 0 && open.every((input) => input.kind === 'approval');
  }

  /** Deletes expired tasks and stops their work; resolves with how many were deleted. */
  async sweepExpiredTasks(now = Date.now()): Promise<number> {
    const deleted = await deleteExpiredTasks(now);
    for (const { id, userId } of deleted) {
      this.running.get(id)?.abort(new Error('Task expired'));
      publishTaskEvent(this.bus, { type: 'task-deleted', taskId: id, userId });
    }
    return deleted.length;
  }

  /** Stops every running task without changing its state: used when the process is going away. */
  abortAll(): void {
    for (const controller of this.running.values()) controller.abort(new HandedOver('Server shutting down'));
  }

  /**
   * Renews the leases of the tasks this process runs. A task whose lease is no longer this instance's
   * (it stalled past the lease, and another instance took the task over) stops here without a trace:
   * its new runner records the outcome.
   */
  async renewLeases(): Promise<void> {
    const ids = [...this.running.keys()];
    const until = Date.now() + this.config.leaseMs;
    const held = new Set<string>();
    for (let start = 0; start < ids.length; start += leaseBatch) {
      for (const id of await renewTaskLeases(this.config.instanceId, ids.slice(start, start + leaseBatch), until)) held.add(id);
    }
    for (const id of ids) {
      if (!held.has(id)) this.running.get(id)?.abort(new HandedOver('Taken over by another instance'));
    }
  }

  /** Stops every running task and hands it back, so that another instance resumes it at once. */
  async handOver(): Promise<number> {
    this.abortAll();
    const released = await releaseTaskLeases(this.config.instanceId);
    if (released > 0) this.bus.publish(topics.leases, { type: 'leases-released' });
    return released;
  }

  private run(row: TaskRow, tool: ToolDefinition, resumedFrom?: ToolContext['resumedFrom']): void {
    const controller = new AbortController();
    this.running.set(row.id, controller);
    // Cancelled (or deleted) through another instance: the tool stops here, where it runs.
    const stopFollowing = this.bus.subscribe(topics.task(row.id), (event) => {
      if (!event.remote) return;
      if (event.type === 'task-changed' && isTerminal(event.task.status)) controller.abort(new Error('Task cancelled'));
      if (event.type === 'task-deleted') controller.abort(new Error('Task deleted'));
    });
    const progress = new CoalescedProgress(row, this.progressWrites, progressWriteIntervalMs);
    const ctx: ToolContext = {
      signal: controller.signal,
      taskId: row.id,
      userId: row.userId,
      resumedFrom,
      noteUpstreamTask: (upstreamTaskId, upstreamSessionId) => setTaskUpstream(row.id, upstreamTaskId, upstreamSessionId),
      progress: (done, total, rawMessage) => {
        if (controller.signal.aborted) return;
        const message = rawMessage === undefined ? undefined : storableText(rawMessage);
        const updated = progress.report({ progress: done, progressTotal: total ?? null, progressMessage: message ?? null });
        if (updated) publishTaskEvent(this.bus, { type: 'task-progress', task: updated, progress: done, total, message });
      },
      status: (message) => {
        if (controller.signal.aborted) return;
        const updated = progress.report({ statusMessage: storableText(message) });
        if (updated) this.announce(updated, false);
      },
      // Kept with the task; the progress report that follows it publishes the change.
      output: (text) => {
        if (!controller.signal.aborted) progress.report({ partialOutput: appendOutput(row.partialOutput, storableText(text)) });
      },
      log: (level, data, logger) => {
        if (controller.signal.aborted) return;
        publishTaskEvent(this.bus, { type: 'task-log', task: row, level, data, ...(logger !== undefined ? { logger } : {}) });
      },
      closeStream: () => {
        if (!controller.signal.aborted) publishTaskEvent(this.bus, { type: 'task-stream-close', task: row });
      },
      elicit: async (request, { key }) => {
        const fields = describeFields(request.requestedSchema);
        if (!fields.ok) throw new ToolProtocolError(-32602, `Invalid elicitation: ${fields.message}`);
        const answered = await this.inputs.ask(row, 'elicitation', key, { ...request }, controller.signal);
        return {
          ...(answered.response as unknown as Pick<ElicitAnswer, 'action' | 'content'>),
          answeredBy: answered.answeredBy === 'dashboard' ? 'dashboard' : 'client',
          answeredByLabel: answered.answeredByLabel,
        };
      },
      approve: async (request, { key }) => {
        const answered = await this.inputs.ask(row, 'approval', key, { ...request }, controller.signal);
        return { approved: answered.response?.decision === 'approve', answeredByLabel: answered.answeredByLabel };
      },
      createMessage: async (request, { key }) => {
        if (this.config.clientCanSample && !(await this.config.clientCanSample(row))) {
          throw new Error('the client of this task cannot sample: it did not declare the sampling capability');
        }
        const answered = await this.inputs.ask(row, 'sampling', key, request, controller.signal);
        const refused = answered.response?.error as { code?: number; message?: string } | undefined;
        // A failed upstream call is the tool's failure (an isError result the model can read), not a protocol error.
        if (refused) throw new Error(`the client refused sampling/createMessage: ${refused.message ?? 'no reason given'}`);
        return answered.response ?? {};
      },
    };
    // The tool starts after the caller's turn (createTask's caller awaits it, then subscribes a few
    // promise reactions later), so that whoever follows the task (a plain call's stream) is listening
    // before the tool's first log message or progress report.
    new Promise<void>((resolve) => setImmediate(resolve))
      .then(() => executeTool(tool, row.arguments, ctx))
      .then(async (outcome) => {
        if (controller.signal.aborted) return;
        // The last report is stored before the outcome: once the task has ended it would be refused. It
        // is only progress: storage that cannot take it must not hold the outcome back.
        await progress.flush().catch((error: unknown) => {
          if (!storageTroubleOf(error)) throw error;
        });
        await this.recordOutcome(row.id, controller.signal, () =>
          this.finish(row.id, outcome.kind === 'result' ? outcome.result : undefined, outcome.kind === 'error' ? outcome.error : undefined),
        );
      })
      .catch((error: unknown) => {
        // A failure here is the engine's own (the database went away); the task stays as it is for recovery.
        console.error(`Task ${row.id}: could not record its outcome:`, error);
      })
      .finally(() => {
        stopFollowing();
        progress.stop();
        if (this.running.get(row.id) === controller) this.running.delete(row.id);
      });
  }

  /**
   * Records a task's outcome, waiting out storage trouble (a full disk, a lock held elsewhere): the
   * task stays this process's, and in memory, until it is recorded. Beyond a bound of such outcomes a
   * write is tried once; the task then stays active, and the next start resumes or fails it honestly.
   */
  private async recordOutcome(taskId: string, signal: AbortSignal, finish: () => Promise<void>): Promise<void> {
    if (this.outcomesWaiting >= maxOutcomesWaiting) return finish();
    this.outcomesWaiting += 1;
    try {
      await persistently(finish, { signal, what: `the outcome of task ${taskId}` });
    } finally {
      this.outcomesWaiting -= 1;
    }
  }

  private async finish(taskId: string, result?: CallToolResult, error?: { code: number; message: string; data?: unknown }): Promise<void> {
    let to: TaskStatus = 'completed';
    let statusMessage = 'The task completed.';
    if (error) {
      to = 'failed';
      statusMessage = storableText(`Tool execution failed: ${error.message}`);
    } else if (result?.isError) {
      to = 'failed';
      statusMessage = storableText(`Tool execution failed: ${firstText(result) ?? 'the tool returned an error result'}`);
    }
    // One commit: the outcome, its event and the withdrawn questions; published once committed.
    const change: TaskTransition = {
      from: activeStatuses,
      to,
      statusMessage,
      actor: 'system',
      runner: this.config.instanceId,
      ...(result ? { result: result as unknown as Record<string, unknown> } : {}),
      ...(error ? { error } : {}),
    };
    const { ended, withdrawn } = await endTask(taskId, change);
    if (ended) {
      this.announce(ended, true);
      this.inputs.announceWithdrawn(withdrawn);
    }
  }

  private announce(row: TaskRow, transition: boolean): void {
    publishTaskEvent(this.bus, { type: 'task-changed', task: row, transition });
  }
}

/**
 * Ends an active task in one commit: the outcome, its event, its notification if anyone listens, and
 * its open questions withdrawn. Publishes nothing: the caller announces what it returns.
 */
async function endTask(taskId: string, change: TaskTransition): Promise<{ ended: TaskRow | undefined; withdrawn: TaskInputRow[] }> {
  return (
    (await endTaskUnheard(taskId, change)) ??
    (await inTransaction(function* (q) {
      const ended = yield* transitionTask.program(q, taskId, change);
      return { ended, withdrawn: ended ? yield* withdrawPendingTaskInputs.program(q, taskId) : [] };
    }))
  );
}

function firstText(result: CallToolResult): string | undefined {
  const block = result.content.find((item) => item.type === 'text' && typeof item.text === 'string');
  const text = block?.text as string | undefined;
  return text && text.length > 300 ? `${text.slice(0, 297)}...` : text;
}
