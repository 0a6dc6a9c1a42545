import { randomBytes } from 'node:crypto';
import { getTaskById, type TaskRow } from '@/db/queries/tasks';
import type { TaskInputRow } from '@/lib/tasks/inputs';
import { getTaskInputById, listPendingTaskInputsBySessionId } from '@/db/queries/inputs';
import { ClientRequests } from './client-requests';
import { clientTaskVia } from './client-task-poller';
import {
  canBeSent,
  canCancelTasks,
  inputRequestId,
  isCopyAnswered,
  isLinkAcceptedBy,
  linkCompletionFor,
  markSentOnGetStream,
  questionsCarried,
  receivesLink,
  releaseGetStreamCopies,
  requestFor,
  sentOnGetStream,
  withdrawalFor,
  withdrawnByTasksCancel,
} from './input-requests';
import {
  appendSessionMessage,
  getFirstSessionStreamMessage,
  getLastSessionStreamProgress,
  getMcpSessionById,
  getLastSessionMessageId,
  getSessionClientTaskRequestStream,
  getSessionRequestStream,
  hasSessionStream,
  hasSessionStreamEnded,
  listSessionMessagesAfter,
  listSessionRequestIdsWithPrefix,
} from '@/db/queries/sessions';
import type { McpSession } from '@/db/queries/sessions';
import { topics, type BusEvent, type EventBus } from '@/lib/tasks/bus';
import { isTerminal } from '@/lib/tasks/states';
import { tasksProtocolVersion } from '../core/schema';
import { isLoggedFor } from './logging';
import { logNotification } from '../core/log-messages';
import { relatedTaskMeta, toTask } from '../core/task-messages';
import { SseStream } from '../http/sse';

const replayBatch = 100;
/**
 * The retry every priming event carries: how long a client waits before it resumes a stream that the
 * server closed (a resumed stream misses nothing, so a second is no loss).
 */
const reconnectDelayMs = 1000;
/** An outbox row with no message: a priming event, which only gives the client an id to resume from (a response stream's also names its request). */
const primingMessage = {};
/** The end of a response stream whose request was cancelled: it has no response, and ends here. */
const endWithoutResponse = { end: true };
const isPriming = (message: Record<string, unknown>) => !('jsonrpc' in message) && !('end' in message);
const isEnd = (message: Record<string, unknown>) => !('jsonrpc' in message) && 'end' in message;
/** The response to the stream's request: the last message of a response stream. */
const isResponse = (message: Record<string, unknown>) => 'jsonrpc' in message && !('method' in message);

/** The key of the response stream of the plain tools/call that started a task. */
export const callStreamKey = (taskId: string) => `call:${taskId}`;
export const taskIdOfCallStream = (key: string) => (key.startsWith('call:') ? key.slice('call:'.length) : undefined);
/** The key of one tasks/result stream of a task (a task may have several waiting at once). */
export const resultStreamKey = (taskId: string) => `result:${taskId}:${randomBytes(9).toString('base64url')}`;
export const taskIdOfResultStream = (key: string) => /^result:([^:]+):[A-Za-z0-9_-]+$/.exec(key)?.[1];

/**
 * An SSE event id names the stream it belongs to and its row in the session's outbox:
 * `get:<row>` on the GET stream, `<response stream key>:<row>` on a response stream. So a
 * Last-Event-ID whose rows are gone still says which stream it was, and never resumes another one.
 */
const getStreamTag = 'get';
const eventIdOf = (key: string | null, rowId: number) => `${key ?? getStreamTag}:${rowId}`;

function parseEventId(text: string): { key: string | null; cursor: number } | undefined {
  const match = /^(.+):(\d{1,15})$/.exec(text);
  if (!match) return undefined;
  return { key: match[1] === getStreamTag ? null : match[1], cursor: Number(match[2]) };
}

/** What a GET request with Last-Event-ID resumes: the session's GET stream, one response stream, or nothing it knows. */
export type ResumeTarget =
  | { kind: 'session'; cursor: number | null }
  | { kind: 'response'; key: string; cursor: number; live: boolean; ended: boolean }
  | { kind: 'unknown' };

/**
 * Runs async work one piece after another per key, in the order it was asked for: a stream's messages
 * are stored in the order they were sent, however long each database call takes. Work on a key with
 * nothing before it starts at once (on SQLite its statements run before `run` returns).
 */
class Lanes {
  private readonly tails = new Map<string, Promise<void>>();

  run<T>(key: string, work: () => Promise<T>): Promise<T> {
    const previous = this.tails.get(key);
    const result = previous ? previous.then(work) : work();
    const tail: Promise<void> = result.then(
      () => this.forget(key, tail),
      () => this.forget(key, tail),
    );
    this.tails.set(key, tail);
    return result;
  }

  private forget(key: string, tail: Promise<void>): void {
    if (this.tails.get(key) === tail) this.tails.delete(key);
  }
}

/**
 * Writes one stream's outbox rows to it, from just after `cursor`, whenever the bus says the stream has
 * new ones; a response stream ends with its response. It reads only while there is something to read: a stream that waits holds no suspended call,
 * and thousands of them may wait at once.
 */
class OutboxPump {
  private pending = false;
  private reading = false;

  constructor(
    bus: EventBus,
    private readonly stream: SseStream,
    private readonly sessionId: string,
    private readonly key: string | null,
    private cursor: number,
  ) {
    // Only this stream's own messages wake it: a session may have thousands of response streams open.
    stream.onClose(bus.subscribe(topics.sessionStream(sessionId, key), () => this.wake()));
  }

  wake(): void {
    this.pending = true;
    if (!this.reading) {
      this.reading = true;
      this.read().catch((error: unknown) => {
        console.error(`Session ${this.sessionId}: stream ${this.key ?? 'GET'} failed`, error);
        this.stream.close();
      });
    }
  }

  private async read(): Promise<void> {
    const { stream, key } = this;
    try {
      while (this.pending && !stream.closed) {
        this.pending = false;
        const batch = await listSessionMessagesAfter(this.sessionId, this.cursor, replayBatch, key);
        for (const row of batch) {
          if (isEnd(row.message)) {
            stream.close();
            return;
          }
          if (isPriming(row.message)) stream.prime(eventIdOf(key, row.id), reconnectDelayMs);
          else stream.send(row.message, eventIdOf(key, row.id));
          this.cursor = row.id;
          if (key !== null && isResponse(row.message)) {
            stream.close();
            return;
          }
        }
        if (batch.length === replayBatch) this.pending = true;
      }
    } finally {
      this.reading = false;
    }
  }
}

/** The turn in which a stream's messages are stored, one after another. */
const laneOf = (sessionId: string, key: string | null) => `${sessionId}\u0000${key ?? ''}`;

/** A message to store, or work that decides it when its turn comes (undefined: nothing to send). */
type Outgoing = Record<string, unknown> | (() => Promise<Record<string, unknown> | undefined>);

/**
 * The sessions' streams. Every message is written to the session's outbox first, under the stream it
 * belongs to (the GET stream, or one POST response stream), and its row id is its SSE event id: unique
 * across all of the session's streams. A client that reconnects with Last-Event-ID gets every message
 * of that one stream it missed, in order, and a response stream then ends with its response.
 */
export class SessionStreams {
  private readonly open_ = new Map<string, SseStream>();
  /** The readers of each response stream (the original POST, and GET requests that resumed it). */
  private readonly responseReaders = new Map<string, { sessionId: string; readers: Set<SseStream> }>();
  /** Response streams whose request is still being worked on in this process. */
  private readonly liveResponses = new Set<string>();
  /** The last progress each running task sent on its session's GET stream: progress must increase. */
  private readonly progressOnGetStream = new Map<string, number>();
  /** Each stream's messages, stored one after another (key: session and stream). */
  private readonly deliveries = new Lanes();
  /** Each task's questions, relayed one event after another (key: task). */
  private readonly relays = new Lanes();
  /**
   * Requests to clients about their own tasks, sent through the sessions' outboxes on the stream their
   * question went on; on the GET stream once that stream has ended (nobody reads it any more).
   */
  readonly clientRequests = new ClientRequests(async (sessionId, message, stream) => {
    const ended = stream !== null && (await hasSessionStreamEnded(sessionId, stream));
    await this.store(sessionId, message, ended ? null : stream);
  });

  constructor(
    private readonly bus: EventBus,
    /** The dashboard's page of a task (from APP_URL): the link a client that takes only URL-mode elicitation is sent. */
    private readonly taskPageUrl: (taskId: string) => string,
    private readonly keepAliveMs?: number,
  ) {}

  /** Opens the session's stream; a newer stream replaces an older one (the client reconnected). */
  async open(session: McpSession, resumeFrom: number | null): Promise<SseStream> {
    const sessionId = session.id;
    this.close(sessionId);
    const stream = new SseStream(this.keepAliveMs);
    this.open_.set(sessionId, stream);
    stream.onClose(() => {
      if (this.open_.get(sessionId) !== stream) return;
      this.open_.delete(sessionId);
      this.offerElsewhere(sessionId).catch((error: unknown) => console.error(`Session ${sessionId}: offering its questions again failed`, error));
    });
    try {
      // A fresh stream starts after the newest message, read in the GET stream's turn: every copy of a
      // question sent from now on (marked as on the open GET stream) is stored after it, where the pump reads it.
      const cursor = resumeFrom ?? (await this.deliveries.run(laneOf(sessionId, null), () => getLastSessionMessageId(sessionId)));
      if (resumeFrom === null) {
        // Clients before 2025-11-25 would try to parse an event without a message.
        if (session.protocolVersion === tasksProtocolVersion) this.deliver(sessionId, primingMessage);
        // The questions still open are asked on it again, each with a new request id (an id is never used
        // twice in a session). Not those a tasks/result stream of the session is carrying itself, nor
        // those a relayed question has put on this stream meanwhile. Each is decided in its task's turn
        // of relays, from the question as it is then: the relay of a change to it (an answer, the
        // client's own task) runs wholly before or after, so no copy is sent from a row it made stale.
        for (const listed of await listPendingTaskInputsBySessionId(sessionId)) {
          if (stream.closed) break;
          await this.relays.run(listed.taskId, async () => {
            const [input, task] = await Promise.all([getTaskInputById(listed.id), getTaskById(listed.taskId)]);
            if (stream.closed || !input || input.status !== 'pending' || !task || input.clientTaskId) return;
            if (!canBeSent(session, input.kind) || isLinkAcceptedBy(sessionId, input.id)) return;
            if (!questionsCarried(sessionId, task.id) && !sentOnGetStream(sessionId, input.id)) this.sendQuestion(session, input, task.expiresAt, true);
          });
        }
      }
      // The pump reads every message stored after the cursor, those delivered above included.
      new OutboxPump(this.bus, stream, sessionId, null, cursor).wake();
    } catch (error) {
      stream.close();
      throw error;
    }
    return stream;
  }

  /**
   * The questions a closed GET stream carried are offered again: the tasks/result streams waiting for
   * their tasks are woken (an input event on the task's topic only), and a fresh GET stream asks them.
   */
  private async offerElsewhere(sessionId: string): Promise<void> {
    const released = new Set(releaseGetStreamCopies(sessionId));
    if (released.size === 0) return;
    for (const input of await listPendingTaskInputsBySessionId(sessionId)) {
      if (released.has(input.id)) this.bus.publish(topics.task(input.taskId), { type: 'input-changed', input });
    }
  }

  /**
   * Where a Last-Event-ID points: no id opens a fresh GET stream; an id of the GET stream resumes it; an
   * id of a response stream this session still has resumes that stream. Anything else is unknown.
   */
  async resumeTarget(sessionId: string, lastEventId: string | null): Promise<ResumeTarget> {
    const trimmed = lastEventId?.trim() ?? '';
    if (trimmed === '') return { kind: 'session', cursor: null };
    const eventId = parseEventId(trimmed);
    if (!eventId) return { kind: 'unknown' };
    const { key, cursor } = eventId;
    if (key === null) return { kind: 'session', cursor };
    if (!(await hasSessionStream(sessionId, key))) return { kind: 'unknown' };
    const ended = await hasSessionStreamEnded(sessionId, key);
    return { kind: 'response', key, cursor, live: this.liveResponses.has(key), ended };
  }

  /** Resolves with the JSON-RPC id of the request a response stream answers, as its priming row recorded it. */
  async requestIdOfResponse(sessionId: string, key: string): Promise<string | number | undefined> {
    const requestId = (await getFirstSessionStreamMessage(sessionId, key))?.requestId;
    return typeof requestId === 'string' || typeof requestId === 'number' ? requestId : undefined;
  }

  /** Resolves with the last progress sent on a response stream for this token: where progress continues after a restart. */
  lastProgressSent(sessionId: string, key: string, progressToken: string | number): Promise<number | undefined> {
    return getLastSessionStreamProgress(sessionId, key, progressToken);
  }

  /** Resolves with the stream a request to the client went on (null: the GET stream), for requests that follow it up. */
  async streamOfRequest(sessionId: string, requestId: string): Promise<string | null> {
    return (await getSessionRequestStream(sessionId, requestId))?.stream ?? null;
  }

  /** Resolves with where a client's task was followed before a restart; the GET stream when it was not followed yet. */
  async streamOfClientTask(sessionId: string, clientTaskId: string): Promise<string | null> {
    return (await getSessionClientTaskRequestStream(sessionId, clientTaskId))?.stream ?? null;
  }

  /**
   * Opens a response stream for a request being answered: its messages go through the outbox under
   * `key`, so that the client can resume it. The stream stays live until `endResponse`.
   */
  openResponse(session: McpSession, key: string, requestId: string | number): SseStream {
    this.liveResponses.add(key);
    // The priming event gives the client an event id before anything else happens; its row keeps the
    // request's id, so that the request can be answered on this stream after a restart.
    if (session.protocolVersion === tasksProtocolVersion) this.deliver(session.id, { requestId }, key);
    return this.readResponse(session.id, key, 0);
  }

  /** A reader of a response stream from just after `cursor`; it ends after the response. */
  readResponse(sessionId: string, key: string, cursor: number): SseStream {
    const stream = new SseStream(this.keepAliveMs);
    const entry = this.responseReaders.get(key) ?? { sessionId, readers: new Set<SseStream>() };
    entry.readers.add(stream);
    this.responseReaders.set(key, entry);
    stream.onClose(() => {
      entry.readers.delete(stream);
      if (entry.readers.size === 0 && this.responseReaders.get(key) === entry) this.responseReaders.delete(key);
    });
    new OutboxPump(this.bus, stream, sessionId, key, cursor).wake();
    return stream;
  }

  /** Whether anyone is reading the response stream now (heartbeats for nobody are not written). */
  isResponseRead(key: string): boolean {
    return (this.responseReaders.get(key)?.readers.size ?? 0) > 0;
  }

  /** Ends the connections reading a response stream; its request goes on, and a client may resume it. */
  disconnectResponse(key: string): void {
    for (const reader of this.responseReaders.get(key)?.readers ?? []) reader.close();
  }

  /** Marks a response stream live again: its request is being worked on once more (after a restart). */
  reviveResponse(key: string): void {
    this.liveResponses.add(key);
  }

  sendOnResponse(sessionId: string, key: string, message: Record<string, unknown>): void {
    this.deliver(sessionId, message, key);
  }

  /**
   * The request of a response stream is done: its response (the stream's last message) is written for
   * every reader, present and resuming; without one (the request was cancelled) the stream just ends.
   */
  endResponse(sessionId: string, key: string, response?: Record<string, unknown>): void {
    this.liveResponses.delete(key);
    this.deliver(sessionId, response ?? endWithoutResponse, key);
    if (!response) for (const reader of this.responseReaders.get(key)?.readers ?? []) reader.close();
  }

  /**
   * Every question of a task-augmented call also goes to the GET stream of the session that started the
   * task: clients that only poll tasks/get while a task waits are asked there. A copy answered elsewhere
   * is withdrawn. (A plain call's questions go on that call's own stream.)
   */
  private async relayQuestion(input: TaskInputRow): Promise<void> {
    const task = await getTaskById(input.taskId);
    const session = task?.sessionId ? await getMcpSessionById(task.sessionId) : undefined;
    if (!task || !session || !canBeSent(session, input.kind)) return;
    if (input.clientTaskId) {
      // No longer outstanding on the GET stream: should the client's task go nowhere, the question is asked again.
      markSentOnGetStream(session.id, input.id, false);
      // The client is answering through a task of its own: cancel it unless it gave the answer.
      if (input.status !== 'pending' && input.answeredVia !== clientTaskVia(input.clientTaskId) && canCancelTasks(session)) {
        const stream = await this.streamOfClientTask(session.id, input.clientTaskId);
        // Stored before this relay ends: the task's result, which ends the stream, waits for it.
        await this.clientRequests.post(session.id, 'tasks/cancel', { taskId: input.clientTaskId }, stream).catch(() => {});
      }
      return;
    }
    if (task.invocation === 'call') return;
    // Open: a new question, or one whose client task was given up. The streams carrying the task's
    // questions ask it; else the GET stream does, unless a fresh GET stream has asked it meanwhile.
    if (input.status === 'pending') {
      if (!questionsCarried(session.id, task.id) && !sentOnGetStream(session.id, input.id) && !isLinkAcceptedBy(session.id, input.id)) {
        this.sendQuestion(session, input, task.expiresAt, this.open_.has(session.id));
      }
      return;
    }
    markSentOnGetStream(session.id, input.id, false);
    if (withdrawnByTasksCancel(session, input.kind)) return;
    const copies = await listSessionRequestIdsWithPrefix(session.id, inputRequestId(input.id, ''));
    for (const id of copies) {
      if (input.answeredVia !== id && !isCopyAnswered(session.id, id)) this.deliver(session.id, withdrawalFor(input, id));
    }
    if (receivesLink(session, input.kind) && copies.length > 0 && !copies.includes(input.answeredVia ?? '')) this.deliver(session.id, linkCompletionFor(input));
  }

  /** A GET-stream copy of a question, with a request id of its own; `live` when a GET stream is open. */
  private sendQuestion(session: McpSession, input: TaskInputRow, taskExpiresAt: number, live: boolean): void {
    const id = inputRequestId(input.id, `g${randomBytes(6).toString('base64url')}`);
    this.deliver(session.id, requestFor(input, id, session, { expiresAt: taskExpiresAt, pageUrl: this.taskPageUrl(input.taskId) }));
    markSentOnGetStream(session.id, input.id, live);
  }

  /** Sessions with a stream open here (GET or a response): in use, however long since their last request. */
  openSessionIds(): string[] {
    return [...new Set([...this.open_.keys(), ...[...this.responseReaders.values()].map((entry) => entry.sessionId)])];
  }

  /** Whether the session's GET stream is open here (a new one would replace it). */
  hasGetStream(sessionId: string): boolean {
    return this.open_.has(sessionId);
  }

  close(sessionId: string): void {
    this.open_.get(sessionId)?.close();
  }

  /**
   * Queues a message for one of the session's streams (its GET stream by default) and wakes its readers.
   * Returns at once: the stream's messages are stored in the order they were delivered, and a failure
   * is logged. `message` may be work that decides the message when its turn comes.
   */
  deliver(sessionId: string, message: Outgoing, key: string | null = null): void {
    this.store(sessionId, message, key).catch((error: unknown) => console.error(`Session ${sessionId}: a message for stream ${key ?? 'GET'} was lost`, error));
  }

  /** Stores a message in its stream's turn and wakes the stream's readers; rejects when it could not be stored. */
  private store(sessionId: string, message: Outgoing, key: string | null): Promise<void> {
    return this.deliveries.run(laneOf(sessionId, key), async () => {
      const body = typeof message === 'function' ? await message() : message;
      if (!body) return;
      const messageId = await appendSessionMessage(sessionId, body, key);
      if (messageId !== undefined) this.bus.publish(topics.sessionStream(sessionId, key), { type: 'session-message', sessionId, messageId });
    });
  }

  /**
   * Whether a task's progress report is ahead of what its session's GET stream was last sent. A task
   * resumed after a restart starts from its stored progress, which lags what was sent, so its first
   * report is compared with the last one in the outbox: 'outbox' says that must be read first.
   */
  private isProgressAhead(task: TaskRow, progress: number): boolean | 'outbox' {
    const known = this.progressOnGetStream.get(task.id);
    if (known === undefined && task.attempt > 1 && task.sessionId && task.progressToken !== null) return 'outbox';
    return this.advanceProgress(task.id, progress, known);
  }

  /** Whether the report is ahead of `last`; the newest progress sent, then. */
  private advanceProgress(taskId: string, progress: number, last: number | undefined): boolean {
    if (last !== undefined && progress <= last) return false;
    this.progressOnGetStream.set(taskId, progress);
    return true;
  }

  /** Resolves once every question event of the task seen so far has been relayed to the streams. */
  questionRelaysSettled(taskId: string): Promise<void> {
    return this.relays.run(taskId, async () => {});
  }

  /** Turns task events into the notifications the session that started the task receives. */
  notifyTaskEvents(event: BusEvent): void {
    if (event.type === 'input-changed') {
      const input = event.input;
      this.relays
        .run(input.taskId, () => this.relayQuestion(input))
        .catch((error: unknown) => console.error(`Relaying question ${input.id} of task ${input.taskId} failed`, error));
    }
    // A plain call's client knows no task: it hears of its progress on the call's own stream.
    if (event.type === 'task-changed' && event.transition && event.task.sessionId && event.task.invocation === 'task') {
      this.deliver(event.task.sessionId, { jsonrpc: '2.0', method: 'notifications/tasks/status', params: toTask(event.task) });
    }
    if (event.type === 'task-log' && event.task.sessionId && event.task.invocation === 'task') {
      const { task, level, data, logger } = event;
      const sessionId = task.sessionId!;
      // The level is read in the message's turn, so that the stream keeps the order the tool logged in.
      this.deliver(sessionId, async () => ((await isLoggedFor(sessionId, level)) ? logNotification(level, data, logger, relatedTaskMeta(task.id)) : undefined));
    }
    if (event.type === 'task-changed' && isTerminal(event.task.status)) this.progressOnGetStream.delete(event.task.id);
    if (event.type === 'task-deleted') this.progressOnGetStream.delete(event.taskId);
    if (event.type === 'task-progress' && event.task.sessionId && event.task.progressToken !== null && event.task.invocation === 'task') {
      const { task, progress, total, message } = event;
      const notification = {
        jsonrpc: '2.0',
        method: 'notifications/progress',
        params: {
          progressToken: task.progressToken,
          progress,
          ...(total !== undefined ? { total } : {}),
          ...(message ? { message } : {}),
          _meta: relatedTaskMeta(task.id),
        },
      };
      const sessionId = task.sessionId!;
      const ahead = this.isProgressAhead(task, progress);
      if (ahead === true) this.deliver(sessionId, notification);
      // A resumed task's first reports are compared with the outbox in their turn on the stream.
      else if (ahead === 'outbox') {
        this.deliver(sessionId, async () => {
          const stored = await getLastSessionStreamProgress(sessionId, null, task.progressToken!);
          return this.advanceProgress(task.id, progress, this.progressOnGetStream.get(task.id) ?? stored) ? notification : undefined;
        });
      }
    }
  }
}
