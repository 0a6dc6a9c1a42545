import { describe, expect, it } from 'vitest';
import { questionOf, type EventPayload } from '@/db/queries/notifications';
import { composeEmail, pushMessage, webhookBody } from '@/lib/notify/messages';

/** A call waiting for approval is announced like a question: the server and tool named, the task's page linked, no argument's value. */

const appUrl = 'https://tasks.example.com';
const secret = 'DROP TABLE customers';
const payload: EventPayload = {
  task: {
    id: '6f1c8a52-3c0e-4b8f-9a57-0d2b1f1e9c11',
    sessionId: null,
    tool: 'db__query',
    status: 'input_required',
    statusMessage: 'Waiting for a person to approve query on db in the dashboard',
    client: { name: 'agent', version: '1.0' },
    protocolVersion: '2025-11-25',
    createdAt: Date.UTC(2026, 0, 2, 3, 4, 5),
    arguments: { sql: secret },
  },
  question: questionOf({ id: 'input-1', key: 'upstream:approval', kind: 'approval', request: { server: 'db', tool: 'query', arguments: { sql: secret } } }),
};
const event = { id: 7, type: 'task.input_required' as const, createdAt: Date.UTC(2026, 0, 2, 3, 4, 6), payload: payload as unknown as Record<string, unknown> };
const page = `${appUrl}/tasks/${payload.task.id}`;

describe('an approval in notifications', () => {
  it('is a question that names its server and tool, and no argument', () => {
    expect(payload.question).toEqual({ inputId: 'input-1', key: 'upstream:approval', message: 'Approve query on db?', fields: [], approval: { server: 'db', tool: 'query' } });
  });

  it('reaches a webhook with the server, the tool and where to answer', () => {
    const body = webhookBody(event, appUrl);
    expect(body.data).toMatchObject({ url: page, question: { message: 'Approve query on db?', approval: { server: 'db', tool: 'query' }, answerUrl: page } });
    expect(JSON.stringify(body)).not.toContain(secret);
  });

  it('reaches a browser as a push that opens the task page', () => {
    const push = pushMessage([event], appUrl);
    expect(push).toMatchObject({ title: 'db__query needs you', body: 'Approve query on db?', url: page });
    expect(JSON.stringify(push)).not.toContain(secret);
  });

  it('reaches an e-mail without the arguments, even one that asked for details', () => {
    for (const includeDetails of [false, true]) {
      const email = composeEmail([event], appUrl, includeDetails);
      expect(email.subject).toBe('“db__query” waits for your approval to run query on db');
      expect(email.text).toContain('A call waits for your approval.');
      expect(email.text).toContain('Approve: query on db');
      expect(email.text).toContain(`Approve or deny it here: ${page}`);
      expect(email.text).not.toContain(secret);
    }
  });
});
