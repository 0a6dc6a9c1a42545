import {
  answerTaskInput,
  countPendingTaskInputsByTaskId,
  findOrCreateTaskInput,
  getTaskInputById,
  listTaskInputsByTaskId,
  claimTaskInputForClientTask,
  countPendingTaskInputsByUserId,
  listPendingTaskInputsByUserId,
  clearTaskInputClientTaskId,
  listPendingTaskInputsBySessionId,
  listPendingTaskInputsWithClientTask,
  withdrawPendingTaskInputs,
  type InputKind,
  type TaskInputRow,
} from '@/db/queries/inputs';
import { getTaskById, transitionTask, type TaskRow } from '@/db/queries/tasks';
import { inTransaction } from '@/db/run';
import { getEnv } from '@/lib/env';
import { persistently, StorageGaveUp } from '@/lib/storage/persist';
import { publishTaskEvent, topics, type EventBus } from './bus';
import { describeFields, validateElicitResponse } from './elicitation';
import { isTerminal } from './states';
import { waitFor } from './wait';

export type { TaskInputRow };
export type AnsweredBy = 'client' | 'dashboard';

/** A person's answer to an approval, as its row keeps it. */
export type ApprovalDecision = 'approve' | 'deny';

/**
 * Why an MCP client's answer to an approval is refused: the client is the one whose call waits for it,
 * and an agent approving its own call would defeat the purpose.
 */
export const approvalNotForClients = 'An approval is answered by a person in the dashboard, never by an MCP client';

/** The question, for an approval: what the person is asked to let run. */
export function approvalOf(input: Pick<TaskInputRow, 'request'>): { server: string; tool: string; arguments: Record<string, unknown> } {
  const { server, tool, arguments: args } = input.request as { server?: unknown; tool?: unknown; arguments?: unknown };
  return {
    server: String(server ?? ''),
    tool: String(tool ?? ''),
    arguments: typeof args === 'object' && args !== null && !Array.isArray(args) ? (args as Record<string, unknown>) : {},
  };
}

/** An answer that does not fit its question: why, and which fields. */
export interface AnswerMisfit {
  input: TaskInputRow;
  message: string;
  fieldErrors?: Record<string, string>;
}

export type AnswerAllOutcome = { ok: true; answered: TaskInputRow[] } | { ok: false; misfits: AnswerMisfit[] };

export type AnswerOutcome =
  | { ok: true; input: TaskInputRow }
  | { ok: false; reason: 'not_found' | 'closed' | 'invalid'; message: string; fieldErrors?: Record<string, string>; input?: TaskInputRow };

/**
 * Questions tasks ask people (and model calls they ask clients for). The database decides which answer
 * is first; every change is published, once committed, so the streams and dashboards that show a
 * question can withdraw it. Every method that reads or writes the database is async.
 */
export class TaskInputs {
  constructor(
    private readonly bus: EventBus,
    /** The dashboard's page of a task, where its person can answer whatever client started it. */
    private readonly taskPageUrl: (taskId: string) => string,
  ) {}

  /**
   * Asks once per key: stores the question and moves the task to input_required, or finds the earlier
   * question (and its answer) when the tool runs again after a restart. Resolves with the answered row.
   */
  async ask(task: TaskRow, kind: InputKind, key: string, request: Record<string, unknown>, signal: AbortSignal): Promise<TaskInputRow> {
    const statusMessage = this.waitingMessage(task.id, kind, request);
    signal.throwIfAborted();
    // A question storage cannot take now is tried again (the task stays working meanwhile, which is
    // true); past the window the tool is told, and its task fails saying why.
    const store = () => inTransaction(function* (q) {
      // A task that has ended asks nothing: its question could never be withdrawn.
      const current = yield* getTaskById.program(q, task.id);
      if (!current || isTerminal(current.status)) throw new DOMException('The task has ended', 'AbortError');
      const found = yield* findOrCreateTaskInput.program(q, { taskId: task.id, userId: task.userId, key, kind, request });
      const movedTask = found.created
        ? yield* transitionTask.program(q, task.id, { from: ['working'], to: 'input_required', statusMessage, actor: 'system' })
        : undefined;
      if (found.created && !movedTask) {
        // Not working: waiting on another question, or (PostgreSQL: a cancel committed since the read
        // above) ended, when the new question must not stay behind unwithdrawn.
        const now = yield* getTaskById.program(q, task.id);
        if (!now || isTerminal(now.status)) throw new DOMException('The task has ended', 'AbortError');
      }
      return { ...found, moved: movedTask };
    });
    const { input, created, moved } = await persistently(store, { withinMs: getEnv().STORAGE_RETRY_WINDOW_MS, signal, what: `the question of task ${task.id}` }).catch((error: unknown) => {
      throw error instanceof StorageGaveUp ? new Error(`its question could not be stored: ${error.message}`, { cause: error }) : error;
    });
    if (moved) publishTaskEvent(this.bus, { type: 'task-changed', task: moved, transition: true });
    if (created) this.publish(input);
    return this.waitForAnswer(input.id, signal);
  }

  /**
   * The status of a task while it waits. Many clients cannot be asked (no form elicitation), and none is
   * asked an approval: the status, which every client can read, says where the person can answer.
   */
  private waitingMessage(taskId: string, kind: InputKind, request: Record<string, unknown>): string {
    const page = this.taskPageUrl(taskId);
    if (kind === 'elicitation') {
      return `Waiting for input: ${String(request.message ?? 'a question')} (answer it in the dashboard: ${page}, or in an MCP client that supports elicitation)`;
    }
    if (kind === 'approval') {
      const { server, tool } = approvalOf({ request });
      return `Waiting for a person to approve ${tool} on ${server} in the dashboard: ${page}`;
    }
    return "Waiting for the client's model to answer";
  }

  /** Takes an answer if the question is still open; validates it against the question first. */
  async answer(inputId: string, userId: string, raw: unknown, by: AnsweredBy, label: string | null, via: string | null = null): Promise<AnswerOutcome> {
    const input = await getTaskInputById(inputId);
    if (!input || input.userId !== userId) return { ok: false, reason: 'not_found', message: 'No such question' };
    if (input.status !== 'pending') return { ok: false, reason: 'closed', message: closedMessage(input), input };
    const checked = checkResponse(input, raw);
    if (!checked.ok) return { ok: false, reason: 'invalid', message: checked.message, fieldErrors: checked.fieldErrors, input };
    const [answered] = await this.store([{ input, response: checked.response }], by, label, via);
    if (answered) return { ok: true, input: answered };
    // Answered first elsewhere, or withdrawn: the question as it now stands.
    const now = (await getTaskInputById(inputId)) ?? input;
    return { ok: false, reason: 'closed', message: closedMessage(now), input: now };
  }

  /**
   * A person's approval or denial, given in the dashboard: the only way an approval is answered (every
   * other way refuses it). The first answer wins, as for any question.
   */
  async decide(inputId: string, userId: string, decision: ApprovalDecision, label: string | null): Promise<AnswerOutcome> {
    const input = await getTaskInputById(inputId);
    if (!input || input.userId !== userId || input.kind !== 'approval') return { ok: false, reason: 'not_found', message: 'No such approval' };
    if (input.status !== 'pending') return { ok: false, reason: 'closed', message: closedMessage(input), input };
    const by = label ? ` by ${label}` : '';
    const resumed = decision === 'approve' ? `Approved${by} in the dashboard; working.` : `Denied${by} in the dashboard.`;
    const [answered] = await this.store([{ input, response: { decision } }], 'dashboard', label, null, resumed);
    if (answered) return { ok: true, input: answered };
    const now = (await getTaskInputById(inputId)) ?? input;
    return { ok: false, reason: 'closed', message: closedMessage(now), input: now };
  }

  /**
   * Takes several answers of one user all or none: every answer is checked against its question first,
   * and one that does not fit refuses them all (each misfit named), so a client never has some of its
   * answers taken without knowing which. Questions that are no longer open (answered elsewhere,
   * withdrawn, or another user's) are left out, as a late answer to one question is.
   */
  async answerAll(userId: string, answers: ReadonlyArray<{ inputId: string; raw: unknown }>, by: AnsweredBy, label: string | null): Promise<AnswerAllOutcome> {
    const fitting: Array<{ input: TaskInputRow; response: Record<string, unknown> }> = [];
    const misfits: AnswerMisfit[] = [];
    for (const { inputId, raw } of answers) {
      const input = await getTaskInputById(inputId);
      if (!input || input.userId !== userId || input.status !== 'pending') continue;
      const checked = checkResponse(input, raw);
      if (checked.ok) fitting.push({ input, response: checked.response });
      else misfits.push({ input, message: checked.message, fieldErrors: checked.fieldErrors });
    }
    if (misfits.length > 0) return { ok: false, misfits };
    return { ok: true, answered: await this.store(fitting, by, label, null) };
  }

  /**
   * Records answers in one transaction, each only if its question is still open (the first answer
   * wins), and moves each task none of whose questions is left open back to working. Resolves with the
   * questions answered, once the changes are published.
   */
  private async store(
    answers: ReadonlyArray<{ input: TaskInputRow; response: Record<string, unknown> }>,
    by: AnsweredBy,
    label: string | null,
    via: string | null,
    /** What the status of a task moved back to working says. */
    resumedMessage = 'Input received; working.',
  ): Promise<TaskInputRow[]> {
    if (answers.length === 0) return [];
    const { answered, resumed } = await inTransaction(function* (q) {
      const taken: TaskInputRow[] = [];
      for (const { input, response } of answers) {
        const done = yield* answerTaskInput.program(q, input.id, { response, answeredBy: by, answeredByLabel: label, answeredVia: via });
        if (done) taken.push(done);
      }
      const moved: TaskRow[] = [];
      for (const taskId of new Set(taken.map((input) => input.taskId))) {
        if ((yield* countPendingTaskInputsByTaskId.program(q, taskId)) > 0) continue;
        const back = yield* transitionTask.program(q, taskId, { from: ['input_required'], to: 'working', statusMessage: resumedMessage, actor: by });
        if (back) moved.push(back);
      }
      return { answered: taken, resumed: moved };
    });
    for (const task of resumed) publishTaskEvent(this.bus, { type: 'task-changed', task, transition: true });
    for (const input of answered) this.publish(input);
    return answered;
  }

  listForTask(taskId: string): Promise<TaskInputRow[]> {
    return listTaskInputsByTaskId(taskId);
  }

  async isPending(inputId: string): Promise<boolean> {
    return (await getTaskInputById(inputId))?.status === 'pending';
  }

  /** The client took an open question as a task of its own; resolves with false when it is not open, not this user's, or taken already. */
  async claimForClientTask(inputId: string, userId: string, clientTaskId: string): Promise<boolean> {
    if ((await getTaskInputById(inputId))?.kind === 'approval') return false;
    const { claimed, input } = await inTransaction(function* (q) {
      const took = yield* claimTaskInputForClientTask.program(q, inputId, userId, clientTaskId);
      return { claimed: took, input: took ? yield* getTaskInputById.program(q, inputId) : undefined };
    });
    if (input) this.publish(input);
    return claimed;
  }

  /** The client's task for a question went nowhere: the question is asked again like any other (published, so the streams ask it). */
  async forgetClientTask(inputId: string): Promise<void> {
    const input = await inTransaction(function* (q) {
      yield* clearTaskInputClientTaskId.program(q, inputId);
      return yield* getTaskInputById.program(q, inputId);
    });
    if (input?.status === 'pending') this.publish(input);
  }

  get(inputId: string): Promise<TaskInputRow | undefined> {
    return getTaskInputById(inputId);
  }

  /** A user's open questions with their tasks, newest first: the dashboard's inbox. */
  listPendingForUser(userId: string) {
    return listPendingTaskInputsByUserId(userId);
  }

  /** How many questions and approvals wait for a person (model calls wait for the client, not for them). */
  countWaitingForUser(userId: string): Promise<number> {
    return countPendingTaskInputsByUserId(userId, ['elicitation', 'approval']);
  }

  listPendingForSession(sessionId: string): Promise<TaskInputRow[]> {
    return listPendingTaskInputsBySessionId(sessionId);
  }

  listFollowedByClientTasks() {
    return listPendingTaskInputsWithClientTask();
  }

  /**
   * A client refused a request it alone can answer (sampling): the asking tool gets the client's error.
   * Questions a person can answer in the dashboard stay open instead.
   */
  async refuse(inputId: string, userId: string, error: { code: number; message: string }, label: string | null, via: string): Promise<void> {
    const input = await getTaskInputById(inputId);
    if (!input || input.userId !== userId || input.kind !== 'sampling' || input.status !== 'pending') return;
    // Only a pending question takes it: an answer that came meanwhile stays.
    const answered = await answerTaskInput(inputId, { response: { error }, answeredBy: 'client', answeredByLabel: label, answeredVia: via });
    if (answered) this.publish(answered);
  }

  /** Closes the open questions of a task that has ended. */
  async withdrawAll(taskId: string): Promise<void> {
    this.announceWithdrawn(await withdrawPendingTaskInputs(taskId));
  }

  /** Publishes questions withdrawn (committed) by a caller's own transaction, such as a task's ending. */
  announceWithdrawn(inputs: readonly TaskInputRow[]): void {
    for (const input of inputs) this.publish(input);
  }

  private publish(input: TaskInputRow): void {
    publishTaskEvent(this.bus, { type: 'input-changed', input });
  }

  private waitForAnswer(inputId: string, signal: AbortSignal): Promise<TaskInputRow> {
    return waitFor(
      this.bus,
      topics.input(inputId),
      async () => {
        const input = await getTaskInputById(inputId);
        if (!input || input.status === 'withdrawn') throw new DOMException('The question was withdrawn', 'AbortError');
        return input.status === 'answered' ? input : undefined;
      },
      signal,
    );
  }
}

function closedMessage(input: TaskInputRow): string {
  if (input.status === 'answered' && input.kind === 'approval') {
    const verb = input.response?.decision === 'approve' ? 'approved' : 'denied';
    return `This call was already ${verb} in the dashboard${input.answeredByLabel ? ` by ${input.answeredByLabel}` : ''}`;
  }
  if (input.status === 'withdrawn' && input.kind === 'approval') return 'This approval was withdrawn: its task has ended';
  if (input.status === 'answered') {
    const who = input.answeredBy === 'dashboard' ? 'in the dashboard' : 'by the MCP client';
    return `This question was already answered ${who}${input.answeredByLabel ? ` (${input.answeredByLabel})` : ''}`;
  }
  return 'This question was withdrawn: its task has ended';
}

function checkResponse(input: TaskInputRow, raw: unknown) {
  // Whatever it says: only decide() takes an approval's answer.
  if (input.kind === 'approval') return { ok: false as const, message: approvalNotForClients, fieldErrors: {} };
  if (input.kind === 'sampling') {
    const result = raw as Record<string, unknown> | null;
    const content = result?.content;
    const valid =
      result &&
      typeof result === 'object' &&
      (result.role === 'assistant' || result.role === 'user') &&
      typeof content === 'object' &&
      content !== null &&
      typeof result.model === 'string';
    return valid
      ? { ok: true as const, response: result as Record<string, unknown> }
      : { ok: false as const, message: 'A sampling result needs role, content and model', fieldErrors: {} };
  }
  const fields = describeFields(input.request.requestedSchema);
  if (!fields.ok) return { ok: false as const, message: fields.message, fieldErrors: {} };
  const checked = validateElicitResponse(fields.fields, raw);
  return checked.ok ? { ok: true as const, response: checked.response as unknown as Record<string, unknown> } : checked;
}
