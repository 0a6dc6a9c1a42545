import type { McpSession } from '@/db/queries/sessions';
import type { TaskInputRow } from '@/lib/tasks/inputs';
import { elicitationModeOf, linkToAnswer } from '../core/elicitation-modes';
import { relatedTaskMeta } from '../core/task-messages';

/**
 * Server-to-client requests for a task's questions. Each copy of a question (one on each fresh GET
 * stream, one on each tasks/result or plain call stream) has its own JSON-RPC id, never used twice:
 * `input:<inputId>:<copy>`, so the answer names the question it answers and every other copy can be
 * withdrawn.
 */
const idPattern = /^input:([0-9a-f-]{36}):([A-Za-z0-9_-]+)$/;

/**
 * A client handles every request it receives, so a session is sent one copy of each question at a
 * time, or its person is asked twice: on the session's open GET stream, or on a tasks/result stream
 * that carries the task's questions. Process-wide, on globalThis like the streams themselves.
 */
const globalForCopies = globalThis as unknown as {
  __mcpTaskServerQuestionCopies?: { carriers: Map<string, number>; onGetStream: Set<string>; answered: Map<string, Set<string>>; left: Map<string, string> };
};
const copies = (globalForCopies.__mcpTaskServerQuestionCopies ??= { carriers: new Map(), onGetStream: new Set(), answered: new Map(), left: new Map() });
const copyKey = (sessionId: string, id: string) => `${sessionId}\u0000${id}`;

/** Marks a tasks/result stream as carrying the task's questions to the session; returns the release. */
export function carryQuestions(sessionId: string, taskId: string): () => void {
  const key = copyKey(sessionId, taskId);
  copies.carriers.set(key, (copies.carriers.get(key) ?? 0) + 1);
  let released = false;
  return () => {
    if (released) return;
    released = true;
    const left = (copies.carriers.get(key) ?? 1) - 1;
    if (left > 0) copies.carriers.set(key, left);
    else copies.carriers.delete(key);
  };
}

export function questionsCarried(sessionId: string, taskId: string): boolean {
  return copies.carriers.has(copyKey(sessionId, taskId));
}

/** Records whether a question's copy went to the session's open GET stream (forgotten once settled). */
export function markSentOnGetStream(sessionId: string, inputId: string, sent: boolean): void {
  if (sent) copies.onGetStream.add(copyKey(sessionId, inputId));
  else copies.onGetStream.delete(copyKey(sessionId, inputId));
}

export function sentOnGetStream(sessionId: string, inputId: string): boolean {
  return copies.onGetStream.has(copyKey(sessionId, inputId));
}

/**
 * The session's GET stream closed: the copies it carried are no longer offered anywhere, and another
 * stream may carry them. Returns the ids of those questions.
 */
export function releaseGetStreamCopies(sessionId: string): string[] {
  const prefix = copyKey(sessionId, '');
  const released: string[] = [];
  for (const key of copies.onGetStream) {
    if (!key.startsWith(prefix)) continue;
    copies.onGetStream.delete(key);
    released.push(key.slice(prefix.length));
  }
  return released;
}

/**
 * Copies the client has responded to, in any way (an answer, an error, a task of its own): they are
 * no longer outstanding on that client, so they are never withdrawn. Kept per session, in this process
 * (after a restart a withdrawal may name a copy that was answered before it), until the session ends.
 * A client chooses the ids it answers with, so each session keeps only its latest ones.
 */
const answeredCopiesKeptPerSession = 1000;

export function markCopyAnswered(sessionId: string, requestId: string): void {
  const answered = copies.answered.get(sessionId) ?? new Set<string>();
  answered.add(requestId);
  if (answered.size > answeredCopiesKeptPerSession) answered.delete(answered.values().next().value!);
  copies.answered.set(sessionId, answered);
}

export function isCopyAnswered(sessionId: string, requestId: string): boolean {
  return copies.answered.get(sessionId)?.has(requestId) ?? false;
}

export function forgetAnsweredCopies(sessionId: string): void {
  copies.answered.delete(sessionId);
  acceptedLinks.delete(sessionId);
  const prefix = copyKey(sessionId, '');
  for (const key of copies.left.keys()) if (key.startsWith(prefix)) copies.left.delete(key);
}

/**
 * A copy of a question that a plain call had sent when it was answered "still running": its client may
 * still be asking its person, so the next call that follows the task (task_result) takes the copy over
 * instead of asking again. Kept per session, in this process, until taken or the session ends.
 */
export function leaveCopy(sessionId: string, inputId: string, requestId: string): void {
  copies.left.set(copyKey(sessionId, inputId), requestId);
}

export function takeLeftCopy(sessionId: string, inputId: string): string | undefined {
  const key = copyKey(sessionId, inputId);
  const requestId = copies.left.get(key);
  copies.left.delete(key);
  return requestId;
}

/**
 * Questions whose link the session's client accepted (its person is answering on the task's page): not
 * sent to it again, on any stream. Kept like the answered copies: per session, in this process, latest
 * ones only (a link sent again after a restart is one more prompt, nothing worse).
 */
const globalForLinks = globalThis as unknown as { __mcpTaskServerAcceptedLinks?: Map<string, Set<string>> };
const acceptedLinks = (globalForLinks.__mcpTaskServerAcceptedLinks ??= new Map());

export function markLinkAccepted(sessionId: string, inputId: string): void {
  const accepted = acceptedLinks.get(sessionId) ?? new Set<string>();
  accepted.add(inputId);
  if (accepted.size > answeredCopiesKeptPerSession) accepted.delete(accepted.values().next().value!);
  acceptedLinks.set(sessionId, accepted);
}

export function isLinkAcceptedBy(sessionId: string, inputId: string): boolean {
  return acceptedLinks.get(sessionId)?.has(inputId) ?? false;
}

export function inputRequestId(inputId: string, copy: string): string {
  return `input:${inputId}:${copy}`;
}

export function parseInputRequestId(id: unknown): { inputId: string; copy: string } | null {
  const match = typeof id === 'string' ? idPattern.exec(id) : null;
  return match ? { inputId: match[1], copy: match[2] } : null;
}

type Capabilities = Record<string, unknown> | null;
const objectAt = (value: unknown, key: string): Record<string, unknown> | undefined =>
  typeof value === 'object' && value !== null && typeof (value as Record<string, unknown>)[key] === 'object' && (value as Record<string, unknown>)[key] !== null
    ? ((value as Record<string, unknown>)[key] as Record<string, unknown>)
    : undefined;

/**
 * Whether the client takes such requests as asked: it declared elicitation in form mode, or sampling.
 * Never an approval, which a person gives in the dashboard: the client is the one whose call waits for it.
 */
export function canReceive(session: Pick<McpSession, 'clientCapabilities'>, kind: TaskInputRow['kind']): boolean {
  if (kind === 'approval') return false;
  const capabilities = session.clientCapabilities as Capabilities;
  if (kind === 'sampling') return objectAt(capabilities, 'sampling') !== undefined;
  return elicitationModeOf(capabilities) === 'form';
}

/** Whether the client is sent a question as a link to the task's page: it declared URL-mode elicitation only. */
export function receivesLink(session: Pick<McpSession, 'clientCapabilities'>, kind: TaskInputRow['kind']): boolean {
  return kind === 'elicitation' && elicitationModeOf(session.clientCapabilities) === 'url';
}

/** Whether the client is sent such a question at all: as asked, or as a link. */
export function canBeSent(session: Pick<McpSession, 'clientCapabilities'>, kind: TaskInputRow['kind']): boolean {
  return canReceive(session, kind) || receivesLink(session, kind);
}

/** Whether the client lets us cancel the tasks it runs for us (capabilities.tasks.cancel). */
export function canCancelTasks(session: Pick<McpSession, 'clientCapabilities'>): boolean {
  return objectAt(objectAt(session.clientCapabilities, 'tasks'), 'cancel') !== undefined;
}

/**
 * Whether the client runs this kind of request as a task of its own (tasks.requests.*). A link is
 * always sent as a plain request: what its client returns is consent, never a task's answer.
 */
export function acceptsAsTask(session: Pick<McpSession, 'clientCapabilities'>, kind: TaskInputRow['kind']): boolean {
  if (kind === 'approval' || receivesLink(session, kind)) return false;
  const requests = objectAt(objectAt(session.clientCapabilities, 'tasks'), 'requests');
  return kind === 'sampling'
    ? objectAt(objectAt(requests, 'sampling'), 'createMessage') !== undefined
    : objectAt(objectAt(requests, 'elicitation'), 'create') !== undefined;
}

/**
 * Whether a question's messages name the asking task (related-task _meta): yes for a client that
 * started the task, no for a plain call's client, which knows no task (and an SDK that keeps task
 * messages for the tasks it knows would hold its answer back instead of sending it).
 */
export type RelatedTask = 'named' | 'unnamed';

/** What a copy of a question needs to know of the asking task. */
export interface AskingTask {
  expiresAt: number;
  /** The task's page in the dashboard, for a client sent a link. */
  pageUrl: string;
}

/**
 * The request for one copy of a question. For a session whose client takes such requests as tasks of
 * its own, it is task-augmented, with a ttl that ends with the asking task; for one that takes only
 * URL-mode elicitation, it is a link to the task's page.
 */
export function requestFor(
  input: TaskInputRow,
  id: string,
  session: Pick<McpSession, 'clientCapabilities'>,
  task: AskingTask,
  relatedTask: RelatedTask = 'named',
) {
  const asTask = acceptsAsTask(session, input.kind) ? { ttl: Math.max(1000, task.expiresAt - Date.now()) } : undefined;
  const method = input.kind === 'sampling' ? 'sampling/createMessage' : 'elicitation/create';
  const requestMeta = (input.request._meta ?? {}) as Record<string, unknown>;
  const meta = { ...requestMeta, ...(relatedTask === 'named' ? relatedTaskMeta(input.taskId) : {}) };
  const asked = receivesLink(session, input.kind) ? linkToAnswer(input, task.pageUrl, true) : { ...input.request, ...(asTask ? { task: asTask } : {}) };
  return {
    jsonrpc: '2.0' as const,
    id,
    method,
    params: { ...asked, ...(Object.keys(meta).length > 0 ? { _meta: meta } : {}) },
  };
}

/**
 * Tells a client sent a link that its question is settled (answered, in the dashboard or through
 * another copy, or withdrawn): the person need not finish on the page. Clients ignore an elicitationId
 * they do not know or have seen completed, so a session that never opened the link loses nothing.
 */
export function linkCompletionFor(input: TaskInputRow, relatedTask: RelatedTask = 'named') {
  return {
    jsonrpc: '2.0' as const,
    method: 'notifications/elicitation/complete',
    params: { elicitationId: input.id, ...(relatedTask === 'named' ? { _meta: relatedTaskMeta(input.taskId) } : {}) },
  };
}

/**
 * Whether this session's copies of such a question are withdrawn with tasks/cancel instead of
 * notifications/cancelled: they were sent task-augmented, and the cancellation utility reserves the
 * notification for plain requests. The client's task is cancelled once it names it (its
 * CreateTaskResult), and only if it declared tasks.cancel.
 */
export function withdrawnByTasksCancel(session: Pick<McpSession, 'clientCapabilities'>, kind: TaskInputRow['kind']): boolean {
  return acceptsAsTask(session, kind);
}

/** Withdraws a copy that was not the one answered. */
export function withdrawalFor(input: TaskInputRow, id: string, relatedTask: RelatedTask = 'named') {
  const reason =
    input.status === 'withdrawn'
      ? 'The task ended before the question was answered'
      : `Answered ${input.answeredBy === 'dashboard' ? 'in the dashboard' : 'through another copy of this request'}`;
  return {
    jsonrpc: '2.0' as const,
    method: 'notifications/cancelled',
    params: { requestId: id, reason, ...(relatedTask === 'named' ? { _meta: relatedTaskMeta(input.taskId) } : {}) },
  };
}

export function clientLabel(session: Pick<McpSession, 'clientName' | 'clientVersion'>): string | null {
  return session.clientName ? `${session.clientName}${session.clientVersion ? ` ${session.clientVersion}` : ''}` : null;
}
