import type { EventPayload, NotificationEventRow } from '@/db/queries/notifications';
import type { NotificationEventType } from '@/db/schema';

/** What each event is called where a person chooses it. */
export const eventLabels: Record<NotificationEventType, string> = {
  'task.input_required': 'A task asks me a question',
  'task.completed': 'A task completed',
  'task.failed': 'A task failed',
  'task.cancelled': 'A task was cancelled',
  'task.expired': 'A task expired before it ended',
};

export const questionEvents: NotificationEventType[] = ['task.input_required'];
export const endEvents: NotificationEventType[] = ['task.completed', 'task.failed', 'task.cancelled', 'task.expired'];

const taskPageUrl = (appUrl: string, taskId: string) => `${appUrl}/tasks/${encodeURIComponent(taskId)}`;

/**
 * A webhook's JSON body, in the Standard Webhooks shape (`type`, `timestamp`, `data`): the task, its
 * status, the question when there is one and where to answer it. The tool's arguments are not sent.
 */
export function webhookBody(event: Pick<NotificationEventRow, 'id' | 'type' | 'createdAt' | 'payload'>, appUrl: string): Record<string, unknown> {
  const { task, question } = event.payload as unknown as EventPayload;
  const url = taskPageUrl(appUrl, task.id);
  return {
    type: event.type,
    timestamp: new Date(event.createdAt).toISOString(),
    data: {
      taskId: task.id,
      status: task.status,
      statusMessage: task.statusMessage,
      tool: task.tool,
      client: task.client,
      protocolVersion: task.protocolVersion,
      createdAt: new Date(task.createdAt).toISOString(),
      url,
      ...(question
        ? { question: { key: question.key, message: question.message, fields: question.fields, ...(question.approval ? { approval: question.approval } : {}), answerUrl: url } }
        : {}),
    },
  };
}

/** The body of "Send test event": shaped like the real ones, naming no task. */
export function testWebhookBody(appUrl: string): Record<string, unknown> {
  return { type: 'webhook.test', timestamp: new Date().toISOString(), data: { message: 'A test event from the dashboard: this endpoint is reachable and verifies signatures.', url: `${appUrl}/notifications` } };
}

const clientName = (task: EventPayload['task']) => (task.client.name ? `${task.client.name}${task.client.version ? ` ${task.client.version}` : ''}` : 'an MCP client');

const shorten = (text: string, max: number) => (text.length > max ? `${text.slice(0, max - 1)}…` : text);

function describe(type: NotificationEventType, payload: EventPayload): string {
  const { task, question } = payload;
  switch (type) {
    case 'task.input_required':
      return question?.approval
        ? `“${task.tool}” waits for your approval to run ${question.approval.tool} on ${question.approval.server}`
        : `“${task.tool}” asks: ${question?.message || 'a question'}`;
    case 'task.completed':
      return `“${task.tool}” completed`;
    case 'task.failed':
      return `“${task.tool}” failed`;
    case 'task.cancelled':
      return `“${task.tool}” was cancelled`;
    case 'task.expired':
      return `“${task.tool}” expired before it ended`;
  }
}

interface Email {
  subject: string;
  text: string;
}

/**
 * One e-mail for one event, or a digest for several. It says what the task asks (or how it ended), which
 * client started it, and links to the task's page; the tool's arguments and the form's fields only with
 * `includeDetails`, and never for an approval.
 */
export function composeEmail(events: Array<Pick<NotificationEventRow, 'type' | 'payload'>>, appUrl: string, includeDetails: boolean): Email {
  const told = events.map((event) => ({ type: event.type, payload: event.payload as unknown as EventPayload }));
  const footer = `\n\nChoose what you are told of at ${appUrl}/notifications`;
  if (told.length === 1) {
    const [{ type, payload }] = told;
    const { task, question } = payload;
    const lines = [
      type !== 'task.input_required' ? describe(type, payload) + '.' : question?.approval ? 'A call waits for your approval.' : 'A task needs your answer.',
      '',
      ...(question?.approval ? [`Approve: ${question.approval.tool} on ${question.approval.server}`] : question ? [`Question: ${question.message}`] : []),
      `Tool: ${task.tool}`,
      `Started by: ${clientName(task)}`,
      `Started: ${new Date(task.createdAt).toUTCString()}`,
      '',
      `${question?.approval ? 'Approve or deny it' : question ? 'Answer it' : 'See it'} here: ${taskPageUrl(appUrl, task.id)}`,
    ];
    // The arguments of a call that waits for approval are read in the dashboard, in full, where it is approved.
    if (question?.approval) lines.push('', 'Its arguments are shown in full on that page.');
    else if (includeDetails) {
      if (question && question.fields.length > 0) lines.push('', 'Fields:', ...question.fields.map((field) => `  ${field.title ?? field.name} (${field.type}${field.choices ? `: ${field.choices.join(', ')}` : ''})`));
      lines.push('', 'Arguments:', JSON.stringify(task.arguments, null, 2));
    }
    return { subject: shorten(describe(type, payload), 140), text: lines.join('\n') + footer };
  }
  const asking = told.filter((event) => event.type === 'task.input_required').length;
  const subject = asking > 0 ? `${asking} ${asking === 1 ? 'task needs' : 'tasks need'} you, ${told.length - asking} ended` : `${told.length} tasks ended`;
  const lines = [`${told.length} things happened to your tasks:`, ''];
  for (const { type, payload } of told) lines.push(`- ${describe(type, payload)} (started by ${clientName(payload.task)})`, `  ${taskPageUrl(appUrl, payload.task.id)}`);
  return { subject, text: lines.join('\n') + footer };
}

/** What a push message carries to the service worker: what it shows, and the page it opens. */
export interface PushMessage {
  title: string;
  body: string;
  url: string;
  /** One notification per task: a later one replaces the earlier. */
  tag: string;
  /** A question the page can offer one-tap answers to. */
  question?: { taskId: string; message: string };
}

/** One notification for one event, or a digest for several. Never the tool's arguments. */
export function pushMessage(events: Array<Pick<NotificationEventRow, 'type' | 'payload'>>, appUrl: string): PushMessage {
  const told = events.map((event) => ({ type: event.type, payload: event.payload as unknown as EventPayload }));
  if (told.length === 1) {
    const [{ type, payload }] = told;
    const { task, question } = payload;
    return {
      title: type === 'task.input_required' ? `${task.tool} needs you` : describe(type, payload),
      body: shorten(question ? question.message : `Started by ${clientName(task)}`, 200),
      url: taskPageUrl(appUrl, task.id),
      tag: task.id,
      ...(question ? { question: { taskId: task.id, message: question.message } } : {}),
    };
  }
  const asking = told.filter((event) => event.type === 'task.input_required').length;
  return {
    title: asking > 0 ? `${asking} ${asking === 1 ? 'task needs' : 'tasks need'} you` : `${told.length} tasks ended`,
    body: shorten(told.map(({ type, payload }) => describe(type, payload)).join('; '), 200),
    url: asking > 0 ? `${appUrl}/inbox` : `${appUrl}/tasks`,
    tag: 'digest',
  };
}
