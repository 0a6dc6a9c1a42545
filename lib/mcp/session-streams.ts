import { getTaskById } from '@/db/queries/tasks';
import type { TaskInputRow } from '@/lib/tasks/inputs';
import { listPendingTaskInputsBySessionId } from '@/db/queries/inputs';
import { ClientRequests } from './client-requests';
import { clientTaskVia } from './client-task-poller';
import { canReceive, getStreamCopy, inputRequestId, markSentOnGetStream, questionsCarried, requestFor, withdrawalFor } from './input-requests';
import {
  appendSessionMessage,
  getMcpSessionById,
  getLastSessionMessageId,
  listSessionMessagesAfter,
} from '@/db/queries/sessions';
import type { McpSession } from '@/db/queries/sessions';
import { topics, type BusEvent, type EventBus } from '@/lib/tasks/bus';
import { tasksProtocolVersion } from './schema';
import { relatedTaskMeta, toTask } from './task-messages';
import { SseStream } from './sse';

const replayBatch = 100;

/**
 * The sessions' GET streams. Messages for a session are written to its outbox first, so a client that
 * reconnects with Last-Event-ID gets every message it missed, in order, exactly once per stream.
 */
export class SessionStreams {
  private readonly open_ = new Map<string, SseStream>();
  /** Requests to clients about their own tasks, sent through the sessions' outboxes. */
  readonly clientRequests = new ClientRequests((sessionId, message) => this.deliver(sessionId, message));

  constructor(private readonly bus: EventBus) {}

  /** Opens the session's stream; a newer stream replaces an older one (the client reconnected). */
  open(session: McpSession, lastEventId: string | null): SseStream {
    const sessionId = session.id;
    this.close(sessionId);
    const stream = new SseStream();
    this.open_.set(sessionId, stream);
    const resumeFrom = lastEventId !== null && /^\d+$/.test(lastEventId.trim()) ? Number(lastEventId.trim()) : null;
    let cursor = resumeFrom ?? getLastSessionMessageId(sessionId);
    // Clients before 2025-11-25 would try to parse an event without a message.
    if (resumeFrom === null && session.protocolVersion === tasksProtocolVersion) stream.prime(cursor);
    // A fresh stream starts after the newest message: the questions still open are asked on it again.
    if (resumeFrom === null) {
      for (const input of listPendingTaskInputsBySessionId(sessionId)) {
        const task = getTaskById(input.taskId);
        if (task && !input.clientTaskId && canReceive(session, input.kind) && !questionsCarried(sessionId, task.id)) {
          this.sendQuestion(session, input, task.expiresAt);
        }
      }
    }

    let pending = true;
    let wake = () => {};
    const unsubscribe = this.bus.subscribe(topics.session(sessionId), () => {
      pending = true;
      wake();
    });
    stream.signal.addEventListener(
      'abort',
      () => {
        unsubscribe();
        wake();
        if (this.open_.get(sessionId) === stream) this.open_.delete(sessionId);
      },
      { once: true },
    );
    void (async () => {
      while (!stream.closed) {
        if (!pending) await new Promise<void>((resolve) => (wake = resolve));
        pending = false;
        if (stream.closed) break;
        const batch = listSessionMessagesAfter(sessionId, cursor, replayBatch);
        for (const row of batch) {
          stream.send(row.message, row.id);
          cursor = row.id;
        }
        if (batch.length === replayBatch) pending = true;
      }
    })().catch((error: unknown) => {
      console.error(`Session ${sessionId}: GET stream failed`, error);
      stream.close();
    });
    return stream;
  }

  /**
   * Every question also goes to the GET stream of the session that started the task, unless one of
   * its tasks/result streams carries it: clients that only poll tasks/get while a task waits are asked
   * there. A copy answered elsewhere is withdrawn.
   */
  private relayQuestion(input: TaskInputRow): void {
    const task = getTaskById(input.taskId);
    const session = task?.sessionId ? getMcpSessionById(task.sessionId) : undefined;
    if (!task || !session || !canReceive(session, input.kind)) return;
    if (input.status === 'pending') {
      if (!questionsCarried(session.id, task.id)) this.sendQuestion(session, input, task.expiresAt);
      return;
    }
    markSentOnGetStream(session.id, input.id, false);
    if (input.clientTaskId) {
      // The client is answering through a task of its own: cancel it unless it gave the answer.
      if (input.answeredVia !== clientTaskVia(input.clientTaskId)) {
        this.clientRequests.send(session.id, 'tasks/cancel', { taskId: input.clientTaskId }).catch(() => {});
      }
      return;
    }
    const id = inputRequestId(input.id, getStreamCopy);
    if (input.answeredVia !== id) this.deliver(session.id, withdrawalFor(input, id));
  }

  /** The GET-stream copy of a question. */
  private sendQuestion(session: McpSession, input: TaskInputRow, taskExpiresAt: number): void {
    this.deliver(session.id, requestFor(input, inputRequestId(input.id, getStreamCopy), session, taskExpiresAt));
    markSentOnGetStream(session.id, input.id, this.open_.has(session.id));
  }

  /** Sessions with a stream open here: in use, however long since their last request. */
  openSessionIds(): string[] {
    return [...this.open_.keys()];
  }

  close(sessionId: string): void {
    this.open_.get(sessionId)?.close();
  }

  /** Queues a message for the session and wakes its stream. */
  deliver(sessionId: string, message: Record<string, unknown>): void {
    const messageId = appendSessionMessage(sessionId, message);
    if (messageId !== undefined) this.bus.publish(topics.session(sessionId), { type: 'session-message', sessionId, messageId });
  }

  /** Turns task events into the notifications the session that started the task receives. */
  notifyTaskEvents(event: BusEvent): void {
    if (event.type === 'input-changed') this.relayQuestion(event.input);
    if (event.type === 'task-changed' && event.transition && event.task.sessionId) {
      this.deliver(event.task.sessionId, { jsonrpc: '2.0', method: 'notifications/tasks/status', params: toTask(event.task) });
    }
    if (event.type === 'task-progress' && event.task.sessionId && event.task.progressToken !== null) {
      this.deliver(event.task.sessionId, {
        jsonrpc: '2.0',
        method: 'notifications/progress',
        params: {
          progressToken: event.task.progressToken,
          progress: event.progress,
          ...(event.total !== undefined ? { total: event.total } : {}),
          ...(event.message ? { message: event.message } : {}),
          _meta: relatedTaskMeta(event.task.id),
        },
      });
    }
  }
}
