import path from 'node:path';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { expect, signUpWithToken, test } from '../fixtures';
import { connectSdkClient, RawMcp, SseReader } from '../helpers/mcp';
import type { TestServer } from '../helpers/server';
import { QuestionsPage } from '../pages/questions';

const screenshots = path.join(__dirname, '..', '..', 'test-results', 'screenshots');

async function rawClient(server: TestServer, token: string, capabilities: Record<string, unknown> = {}) {
  const mcp = new RawMcp(server.mcpUrl, token);
  await mcp.initialize('2025-11-25', capabilities);
  return mcp;
}

test('a question appears live in the dashboard, is answered there, and the client gets the answer', async ({ page, server }) => {
  const token = await signUpWithToken(page, 'asker');
  await page.goto('/tasks');
  await expect(page.locator('[data-live-mode="live"]')).toBeVisible();
  const questions = new QuestionsPage(page);
  await expect(questions.inboxCount()).toHaveCount(0);

  // A client without elicitation support: only the dashboard can answer.
  const sdk = await connectSdkClient(server.mcpUrl, token, { name: 'patchy-client' });
  const results: any[] = [];
  const done = (async () => {
    for await (const message of sdk.client.experimental.tasks.callToolStream(
      // More choices than one-tap buttons are offered for: a form, which checks that one is chosen.
      { name: 'ask_human', arguments: { question: 'Deploy to production?', choices: ['Yes', 'No', 'Not yet', 'Never', 'Ask me later'] } },
      CallToolResultSchema,
      { task: {}, timeout: 120_000 },
    )) results.push(message);
  })();

  await expect(questions.inboxCount()).toHaveText('1');
  await questions.openFromInbox('Deploy to production?');
  await expect(page.getByTestId('status-message')).toContainText('Waiting for input: Deploy to production? (answer it in the dashboard: ');
  await page.screenshot({ path: path.join(screenshots, 'question-form.png'), fullPage: true });
  await questions.submit('Deploy to production?');
  await expect(questions.form('Deploy to production?').getByRole('alert')).toHaveText('Answer is required');
  await questions.form('Deploy to production?').getByLabel('Answer').selectOption('Yes');
  await questions.submit('Deploy to production?');
  await expect(page.getByText(/^Answered in the dashboard by asker-/)).toBeVisible();
  await done;
  const final = results.at(-1);
  expect(final.type).toBe('result');
  expect(final.result.structuredContent).toEqual({ action: 'accept', answeredBy: 'dashboard', content: { answer: 'Yes' } });
  expect(final.result.content[0].text).toBe('Answer (given in the dashboard): Yes');
  await expect(questions.inboxCount()).toHaveCount(0);
  await sdk.close();
});

test('every field type renders and validates', async ({ page, server }) => {
  const token = await signUpWithToken(page, 'fields');
  const mcp = await rawClient(server, token);
  const fields = {
    name: { type: 'string', title: 'Name', minLength: 2, maxLength: 10, default: 'Ada' },
    email: { type: 'string', title: 'Email', format: 'email' },
    site: { type: 'string', title: 'Website', format: 'uri' },
    day: { type: 'string', title: 'Day', format: 'date' },
    at: { type: 'string', title: 'Start', format: 'date-time' },
    age: { type: 'integer', title: 'Age', minimum: 18, maximum: 120 },
    score: { type: 'number', title: 'Score', minimum: 0, maximum: 1 },
    agree: { type: 'boolean', title: 'Agree', default: true },
    colour: { type: 'string', title: 'Colour', enum: ['red', 'green'] },
    size: { type: 'string', title: 'Size', oneOf: [{ const: 's', title: 'Small' }, { const: 'l', title: 'Large' }], default: 'l' },
    tier: { type: 'string', title: 'Tier', enum: ['t1', 't2'], enumNames: ['Basic', 'Premium'] },
    tags: { type: 'array', title: 'Tags', minItems: 1, items: { type: 'string', enum: ['a', 'b', 'c'] }, default: ['b'] },
    pets: { type: 'array', title: 'Pets', maxItems: 1, items: { anyOf: [{ const: 'cat', title: 'Cat' }, { const: 'dog', title: 'Dog' }] } },
  };
  const started = await mcp.call('tools/call', { name: 'ask_human', arguments: { question: 'Fill the form', fields }, task: {} });
  const taskId = started.task.taskId;
  await page.goto(`/tasks/${taskId}`);
  const questions = new QuestionsPage(page);
  const form = questions.form('Fill the form');
  await expect(form).toBeVisible();

  // Defaults are filled in; choices carry their titles.
  await expect(form.getByLabel('Name')).toHaveValue('Ada');
  await expect(form.getByLabel('Agree')).toBeChecked();
  await expect(form.getByLabel('Size')).toHaveValue('l');
  await expect(form.getByLabel('Tier').locator('option')).toHaveText(['Choose…', 'Basic', 'Premium']);
  await expect(form.getByRole('group', { name: 'Tags' }).getByLabel('b')).toBeChecked();
  await expect(form.getByLabel('Email')).toHaveAttribute('type', 'email');
  await expect(form.getByLabel('Website')).toHaveAttribute('type', 'url');
  await expect(form.getByLabel('Day')).toHaveAttribute('type', 'date');
  await expect(form.getByLabel('Start')).toHaveAttribute('type', 'datetime-local');
  await expect(form.getByLabel('Age')).toHaveAttribute('type', 'number');

  await form.getByLabel('Name').fill('A');
  await form.getByLabel('Email').fill('not-an-email');
  await form.getByLabel('Website').fill('nope');
  await form.getByLabel('Age').fill('12');
  await form.getByLabel('Score').fill('1.5');
  await form.getByRole('group', { name: 'Pets' }).getByLabel('Cat').check();
  await form.getByRole('group', { name: 'Pets' }).getByLabel('Dog').check();
  await questions.submit('Fill the form');
  const errors = form.getByRole('alert');
  await expect(errors).toContainText([
    'Name must be at least 2 characters',
    'Email must be an email address',
    'Website must be a URL',
    'Day is required',
    'Start is required',
    'Age must be at least 18',
    'Score must be at most 1',
    'Colour is required',
    'Tier is required',
    'Pets choose at most 1',
  ]);
  await page.screenshot({ path: path.join(screenshots, 'question-form-errors.png'), fullPage: true });
  expect((await mcp.call('tasks/get', { taskId })).status).toBe('input_required');
  // A refused answer keeps what was typed.
  await expect(form.getByLabel('Email')).toHaveValue('not-an-email');
  await expect(form.getByRole('group', { name: 'Pets' }).getByLabel('Dog')).toBeChecked();

  await form.getByLabel('Name').fill('Grace');
  await form.getByLabel('Email').fill('grace@example.com');
  await form.getByLabel('Website').fill('https://example.com');
  await form.getByLabel('Day').fill('2026-12-01');
  await form.getByLabel('Start').fill('2026-12-01T09:30');
  await form.getByLabel('Age').fill('42');
  await form.getByLabel('Score').fill('0.5');
  await form.getByLabel('Colour').selectOption('green');
  await form.getByLabel('Tier').selectOption('t2');
  await form.getByRole('group', { name: 'Pets' }).getByLabel('Dog').uncheck();
  await questions.submit('Fill the form');
  await expect(page.getByText(/^Answered in the dashboard/)).toBeVisible();

  const result = await mcp.call('tasks/result', { taskId });
  expect(result.structuredContent.content).toEqual({
    name: 'Grace',
    email: 'grace@example.com',
    site: 'https://example.com',
    day: '2026-12-01',
    at: '2026-12-01T09:30:00Z',
    age: 42,
    score: 0.5,
    agree: true,
    colour: 'green',
    size: 'l',
    tier: 't2',
    tags: ['b'],
    pets: ['cat'],
  });
});

test('declining in the dashboard ends the task with a result that says so', async ({ page, server }) => {
  const token = await signUpWithToken(page, 'decliner');
  const mcp = await rawClient(server, token);
  const started = await mcp.call('tools/call', { name: 'ask_human', arguments: { question: 'Delete everything?' }, task: {} });
  await page.goto(`/tasks/${started.task.taskId}`);
  await new QuestionsPage(page).submit('Delete everything?', 'Decline');
  await expect(page.getByText(/^Declined in the dashboard/)).toBeVisible();
  const result = await mcp.call('tasks/result', { taskId: started.task.taskId });
  expect(result.content[0].text).toBe('The person declined to answer (in the dashboard).');
});

test('when the client answers first, the open form shows who answered and what', async ({ page, server }) => {
  const token = await signUpWithToken(page, 'racer');
  const mcp = await rawClient(server, token, { elicitation: {} });
  const stream = await mcp.openGetStream();
  await stream.next();
  const started = await mcp.call('tools/call', { name: 'ask_human', arguments: { question: 'Which region?' }, task: {} });
  const question = await stream.nextMessageWhere((message) => message.method === 'elicitation/create');
  await page.goto(`/tasks/${started.task.taskId}`);
  const questions = new QuestionsPage(page);
  await expect(questions.form('Which region?')).toBeVisible();
  await questions.form('Which region?').getByLabel('Answer').fill('from the browser, too late');

  const reply = await mcp.post({ jsonrpc: '2.0', id: question.id, result: { action: 'accept', content: { answer: 'eu-west' } } });
  expect(reply.status).toBe(202);
  await expect(page.getByText('Answered by the MCP client (raw-test 1.0.0)')).toBeVisible();
  await expect(page.locator('[data-input-status="answered"]').getByText('"answer": "eu-west"')).toBeVisible();
  await expect(questions.form('Which region?')).toHaveCount(0);
  await stream.close();
});

test('a browser answer and a client answer at the same moment: exactly one is taken', async ({ page, server }) => {
  const token = await signUpWithToken(page, 'tie');
  const mcp = await rawClient(server, token, { elicitation: {} });
  const stream = await mcp.openGetStream();
  await stream.next();
  for (let round = 0; round < 4; round += 1) {
    const started = await mcp.call('tools/call', { name: 'ask_human', arguments: { question: `Tie ${round}?` }, task: {} });
    const taskId = started.task.taskId;
    const question = await stream.nextMessageWhere((message) => message.method === 'elicitation/create');
    await page.goto(`/tasks/${taskId}`);
    await new QuestionsPage(page).form(`Tie ${round}?`).getByLabel('Answer').fill('browser');
    // Both at once: the browser's submit is pressed in the page itself, so it cannot wait for a form the
    // client's answer may already have removed.
    const [reply, pressed] = await Promise.all([
      mcp.post({ jsonrpc: '2.0', id: question.id, result: { action: 'accept', content: { answer: 'client' } } }),
      page.evaluate((label) => {
        const submit = document.querySelector<HTMLButtonElement>(`form[aria-label="${label}"] button[value="accept"]`);
        submit?.click();
        return submit !== null;
      }, `Answer: Tie ${round}?`),
    ]);
    expect(reply.status).toBe(202);
    // The browser half of the race must really have been pressed, or the round proves nothing.
    expect(pressed).toBe(true);
    const result = await mcp.call('tasks/result', { taskId });
    const winner = result.structuredContent.content.answer;
    expect(['browser', 'client']).toContain(winner);
    expect(result.structuredContent.answeredBy).toBe(winner === 'browser' ? 'dashboard' : 'client');
    await expect(page.getByText(winner === 'browser' ? /^Answered in the dashboard/ : /^Answered by the MCP client/)).toBeVisible();
    const row = server.db().prepare('SELECT count(*) AS n FROM task_events WHERE task_id = ? AND to_status = ?').get(taskId, 'completed');
    expect(row).toEqual({ n: 1 });
  }
  await stream.close();
});

test("a task waiting on the client's model says so", async ({ page, server }) => {
  const token = await signUpWithToken(page, 'sampler');
  const mcp = await rawClient(server, token, { sampling: {} });
  const started = await mcp.call('tools/call', { name: 'summarize', arguments: { text: 'Some text' }, task: {} });
  await page.goto(`/tasks/${started.task.taskId}`);
  await expect(page.getByText('Waiting on the MCP client’s model to answer a sampling request.')).toBeVisible();
  await expect(page.getByTestId('inbox-count')).toHaveCount(0);
  await mcp.call('tasks/cancel', { taskId: started.task.taskId });
  await expect(page.getByText('Withdrawn: the task ended before anyone answered.')).toBeVisible();
});

test('an answer given in the dashboard withdraws every copy the client was sent', async ({ page, server }) => {
  const token = await signUpWithToken(page, 'withdrawn');
  const mcp = await rawClient(server, token, { elicitation: {} });
  const stream = await mcp.openGetStream();
  await stream.next();
  const started = await mcp.call('tools/call', { name: 'ask_human', arguments: { question: 'Who answers?' }, task: {} });
  const taskId = started.task.taskId;
  const getCopy = await stream.nextMessageWhere((message) => message.method === 'elicitation/create');
  // A session is sent one copy at a time: the second copy goes to another session of the same person.
  const other = await rawClient(server, token, { elicitation: {} });
  const waiting = await other.post({ jsonrpc: '2.0', id: 'waiting', method: 'tasks/result', params: { taskId } });
  const reader = new SseReader(waiting);
  const resultCopy = await reader.nextMessageWhere((message) => message.method === 'elicitation/create');

  await page.goto(`/tasks/${taskId}`);
  const questions = new QuestionsPage(page);
  await questions.form('Who answers?').getByLabel('Answer').fill('the dashboard');
  await questions.submit('Who answers?');
  await expect(page.getByText(/^Answered in the dashboard/)).toBeVisible();

  const withdrawnHere = await reader.nextMessageWhere((message) => message.method === 'notifications/cancelled');
  expect(withdrawnHere.params.requestId).toBe(resultCopy.id);
  const withdrawnThere = await stream.nextMessageWhere((message) => message.method === 'notifications/cancelled');
  expect(withdrawnThere.params.requestId).toBe(getCopy.id);
  const final = await reader.nextMessageWhere((message) => message.id === 'waiting');
  expect(final.result.structuredContent).toMatchObject({ answeredBy: 'dashboard', content: { answer: 'the dashboard' } });
  // A late answer from the client is accepted and changes nothing.
  expect((await mcp.post({ jsonrpc: '2.0', id: getCopy.id, result: { action: 'accept', content: { answer: 'late' } } })).status).toBe(202);
  expect((await mcp.call('tasks/result', { taskId })).structuredContent.content).toEqual({ answer: 'the dashboard' });
  await stream.close();
});
