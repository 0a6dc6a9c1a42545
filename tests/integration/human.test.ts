import { CallToolResultSchema, CreateMessageRequestSchema, ElicitationCompleteNotificationSchema, ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { answerInDashboard } from '../helpers/dashboard';
import { connectSdkClient, RawMcp, sleep, SseReader } from '../helpers/mcp';
import { createToken, startServer, type TestServer } from '../helpers/server';

let server: TestServer;
let token: string;

beforeAll(async () => {
  server = await startServer({ TASK_POLL_INTERVAL_MS: '200' });
  token = createToken(server, 'ada@example.com');
});

afterAll(async () => {
  await server?.stop();
});

const elicitCapable = { elicitation: { form: {} } };

async function elicitingClient(answer: (params: any) => Record<string, unknown>) {
  const sdk = await connectSdkClient(server.mcpUrl, token, { capabilities: elicitCapable });
  const asked: any[] = [];
  sdk.client.setRequestHandler(ElicitRequestSchema, async (request) => {
    asked.push(request.params);
    return answer(request.params) as any;
  });
  return { ...sdk, asked };
}

async function runToEnd(client: any, args: Record<string, unknown>) {
  const messages: any[] = [];
  for await (const message of client.experimental.tasks.callToolStream({ name: 'ask_human', arguments: args }, CallToolResultSchema, { task: {} })) {
    messages.push(message);
  }
  return messages;
}

describe('ask_human with the official SDK client', () => {
  it('is answered by the client through tasks/result', async () => {
    const { client, asked, close } = await elicitingClient(() => ({ action: 'accept', content: { answer: 'blue' } }));
    try {
      const messages = await runToEnd(client, { question: 'Favourite colour?', choices: ['red', 'blue'] });
      const taskId = messages[0].task.taskId;
      expect(messages.map((message) => message.type)).toContain('taskStatus');
      const result = messages.at(-1);
      expect(result.type).toBe('result');
      expect(result.result.content[0].text).toBe('Answer (given in the MCP client): blue');
      expect(result.result.structuredContent).toEqual({ action: 'accept', answeredBy: 'client', content: { answer: 'blue' } });
      expect(asked).toHaveLength(1);
      expect(asked[0].message).toBe('Favourite colour?');
      expect(asked[0].requestedSchema.properties.answer.enum).toEqual(['red', 'blue']);
      expect(asked[0]._meta['io.modelcontextprotocol/related-task']).toEqual({ taskId });
      const statuses = server.db().prepare('SELECT to_status FROM task_events WHERE task_id = ? ORDER BY id').all(taskId);
      expect(statuses).toEqual([{ to_status: 'working' }, { to_status: 'input_required' }, { to_status: 'working' }, { to_status: 'completed' }]);
    } finally {
      await close();
    }
  });

  it.each([
    ['decline', 'The person declined to answer (in the MCP client).'],
    ['cancel', 'The person dismissed the question without answering (in the MCP client).'],
  ])('ends with a result that says the person chose %s', async (action, text) => {
    const { client, close } = await elicitingClient(() => ({ action }));
    try {
      const messages = await runToEnd(client, { question: 'Proceed?' });
      expect(messages.at(-1).result.content[0].text).toBe(text);
      expect(messages.at(-1).result.structuredContent).toEqual({ action, answeredBy: 'client' });
    } finally {
      await close();
    }
  });
});

async function rawSession(capabilities: Record<string, unknown> = elicitCapable): Promise<RawMcp> {
  const mcp = new RawMcp(server.mcpUrl, token);
  await mcp.initialize('2025-11-25', capabilities);
  return mcp;
}

async function startTool(mcp: RawMcp, name: string, args: Record<string, unknown>) {
  const result = await mcp.call('tools/call', { name, arguments: args, task: {} });
  return result.task.taskId as string;
}

let resultCalls = 1000;
/** Calls tasks/result and returns the open SSE stream it answers with. */
async function resultStream(mcp: RawMcp, taskId: string): Promise<{ reader: SseReader; id: number }> {
  const id = (resultCalls += 1);
  const response = await mcp.post({ jsonrpc: '2.0', id, method: 'tasks/result', params: { taskId } });
  expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
  return { reader: new SseReader(response), id };
}

const answer = (mcp: RawMcp, requestId: string, result: Record<string, unknown>) => mcp.post({ jsonrpc: '2.0', id: requestId, result });

/** The next message that matches, or null when the stream ends first. */
async function nextMatching(reader: SseReader, matches: (message: Record<string, any>) => boolean): Promise<Record<string, any> | null> {
  for (let message = await reader.nextMessage(); message; message = await reader.nextMessage()) {
    if (matches(message)) return message;
  }
  return null;
}

async function waitForStatus(mcp: RawMcp, taskId: string, status: string) {
  await expect.poll(async () => (await mcp.call('tasks/get', { taskId })).status, { timeout: 10_000 }).toBe(status);
}

describe('what the tools say of themselves, checked by the official SDK client', () => {
  it('describes each tool with annotations and the structured ones with an outputSchema their results fit, also as JSON text', async () => {
    const sdk = await connectSdkClient(server.mcpUrl, token, { capabilities: { ...elicitCapable, sampling: {} } });
    sdk.client.setRequestHandler(ElicitRequestSchema, async (request) =>
      request.params.message === 'Declined?' ? { action: 'decline' } : { action: 'accept', content: { answer: `to ${request.params.message}` } },
    );
    sdk.client.setRequestHandler(CreateMessageRequestSchema, async () => ({ role: 'assistant', content: { type: 'text', text: 'Brief.' }, model: 'test-model' }));
    try {
      expect(sdk.client.getServerVersion()).toMatchObject({ name: 'mcp-task-server', title: 'MCP Task Server', description: expect.any(String), websiteUrl: server.url });
      // Listing the tools makes the SDK compile each outputSchema and validate every later result against it.
      const { tools } = await sdk.client.listTools();
      for (const tool of tools) {
        expect(Object.keys(tool.annotations ?? {}).sort(), tool.name).toEqual(['destructiveHint', 'idempotentHint', 'openWorldHint', 'readOnlyHint']);
      }
      const byName = Object.fromEntries(tools.map((tool) => [tool.name, tool]));
      expect(byName.echo.annotations).toEqual({ readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false });
      expect(byName.ask_human.annotations).toMatchObject({ readOnlyHint: true, openWorldHint: true, idempotentHint: false });
      const builtIn = Object.keys(byName).filter((name) => !name.startsWith('task_'));
      expect(builtIn.filter((name) => byName[name].outputSchema).sort()).toEqual(['ask_human', 'summarize', 'survey']);

      const calls = [
        { name: 'ask_human', arguments: { question: 'Colour?' } },
        { name: 'ask_human', arguments: { question: 'Declined?' } },
        { name: 'survey', arguments: { questions: ['One?', 'Two?'] } },
        { name: 'summarize', arguments: { text: 'A long text.' } },
      ];
      const results = [];
      for (const call of calls) results.push(await sdk.client.callTool(call));
      expect(results.map((result) => result.structuredContent)).toEqual([
        { action: 'accept', answeredBy: 'client', content: { answer: 'to Colour?' } },
        { action: 'decline', answeredBy: 'client' },
        {
          answers: [
            { question: 'One?', action: 'accept', answer: 'to One?', answeredBy: 'client' },
            { question: 'Two?', action: 'accept', answer: 'to Two?', answeredBy: 'client' },
          ],
        },
        { summary: 'Brief.', model: 'test-model' },
      ]);
      for (const result of results) {
        const content = result.content as Array<{ type: string; text: string }>;
        expect(content).toHaveLength(2);
        expect(content[0].text).not.toBe('');
        expect(JSON.parse(content[1].text)).toEqual(result.structuredContent);
      }
    } finally {
      await sdk.close();
    }
  });
});

describe('sampling with the official SDK client', () => {
  it("asks the client's model through sampling/createMessage with related-task _meta", async () => {
    const sdk = await connectSdkClient(server.mcpUrl, token, { capabilities: { sampling: {} } });
    const requests: any[] = [];
    sdk.client.setRequestHandler(CreateMessageRequestSchema, async (request) => {
      requests.push(request.params);
      return { role: 'assistant', content: { type: 'text', text: 'A short summary.' }, model: 'test-model' };
    });
    try {
      const messages: any[] = [];
      for await (const message of sdk.client.experimental.tasks.callToolStream(
        { name: 'summarize', arguments: { text: 'A long text about tasks.' } },
        CallToolResultSchema,
        { task: {} },
      )) messages.push(message);
      const taskId = messages[0].task.taskId;
      expect(messages.at(-1).result.structuredContent).toEqual({ summary: 'A short summary.', model: 'test-model' });
      expect(requests).toHaveLength(1);
      expect(requests[0].messages[0].content.text).toContain('A long text about tasks.');
      expect(requests[0].maxTokens).toBe(300);
      expect(requests[0]._meta['io.modelcontextprotocol/related-task']).toEqual({ taskId });
    } finally {
      await sdk.close();
    }
  });

  it('refuses a sampling tool to a client that cannot sample', async () => {
    const mcp = await rawSession({ elicitation: {} });
    const error = await mcp.error('tools/call', { name: 'summarize', arguments: { text: 'x' }, task: {} });
    expect(error.code).toBe(-32600);
    expect(error.message).toMatch(/needs a client that supports sampling/);
  });

  it('fails the task with an isError result when the client refuses a sampling request', async () => {
    const mcp = await rawSession({ sampling: {} });
    const taskId = await startTool(mcp, 'summarize', { text: 'x' });
    const { reader, id } = await resultStream(mcp, taskId);
    const request = await reader.nextMessage();
    const refusal = await mcp.post({ jsonrpc: '2.0', id: request!.id, error: { code: -32600, message: 'User rejected sampling' } });
    expect(refusal.status).toBe(202);
    const final = await reader.nextMessage();
    // A failed upstream call is the tool's failure, which the model can read, not a protocol error.
    expect(final).toMatchObject({ id, result: { isError: true, content: [{ type: 'text', text: 'Tool summarize failed: the client refused sampling/createMessage: User rejected sampling' }] } });
    expect(final!.error).toBeUndefined();
    expect((await mcp.call('tasks/get', { taskId })).status).toBe('failed');
  });

  it('refuses a sampling result without role, content and model', async () => {
    const mcp = await rawSession({ sampling: {} });
    const taskId = await startTool(mcp, 'summarize', { text: 'x' });
    const { reader } = await resultStream(mcp, taskId);
    const request = await reader.nextMessage();
    expect(request!.method).toBe('sampling/createMessage');
    const bad = await answer(mcp, request!.id, { content: { type: 'text', text: 'no role' } });
    expect(bad.status).toBe(400);
    expect((await bad.json()).error.message).toMatch(/role, content and model/);
    expect((await answer(mcp, request!.id, { role: 'assistant', content: { type: 'text', text: 'ok' }, model: 'm' })).status).toBe(202);
    expect((await reader.nextMessage())!.result.content[0].text).toBe('ok');
  });
});

describe('a client that takes questions as tasks of its own', () => {
  async function taskClient(onQuestion: (store: any, taskId: string) => void) {
    const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
    const { StreamableHTTPClientTransport } = await import('@modelcontextprotocol/sdk/client/streamableHttp.js');
    const { InMemoryTaskStore } = await import('@modelcontextprotocol/sdk/experimental/tasks');
    const store = new InMemoryTaskStore();
    const client = new Client(
      { name: 'task-capable', version: '2.0.0' },
      { capabilities: { elicitation: { form: {} }, tasks: { list: {}, cancel: {}, requests: { elicitation: { create: {} } } } }, taskStore: store },
    );
    client.onerror = () => {};
    const asked: any[] = [];
    client.setRequestHandler(ElicitRequestSchema, async (request, extra: any) => {
      asked.push(request.params);
      const task = await extra.taskStore.createTask({ ttl: (request.params as any).task?.ttl, pollInterval: 100 });
      onQuestion(extra.taskStore, task.taskId);
      return { task } as any;
    });
    const transport = new StreamableHTTPClientTransport(new URL(server.mcpUrl), { requestInit: { headers: { Authorization: `Bearer ${token}` } } });
    await client.connect(transport);
    return { client, transport, store, asked };
  }

  it('receives a task-augmented elicitation/create, is polled, and its result is the answer', async () => {
    const { client, transport, asked } = await taskClient((taskStore, taskId) => {
      setTimeout(() => void taskStore.storeTaskResult(taskId, 'completed', { action: 'accept', content: { answer: 'from my task' } }), 300);
    });
    try {
      const messages: any[] = [];
      for await (const message of client.experimental.tasks.callToolStream({ name: 'ask_human', arguments: { question: 'Async?' } }, CallToolResultSchema, {
        task: {},
      })) messages.push(message);
      const taskId = messages[0].task.taskId;
      expect(asked).toHaveLength(1);
      expect(asked[0].task.ttl).toBeGreaterThan(0);
      expect(asked[0]._meta['io.modelcontextprotocol/related-task']).toEqual({ taskId });
      expect(messages.at(-1).result.content[0].text).toBe('Answer (given in the MCP client): from my task');
      const row = server.db().prepare('SELECT client_task_id, answered_by_label FROM task_inputs WHERE task_id = ?').get(taskId) as any;
      expect(row.client_task_id).toMatch(/.+/);
      expect(row.answered_by_label).toBe('task-capable 2.0.0');
    } finally {
      await transport.terminateSession().catch(() => {});
      await client.close();
    }
  });

  it('asks on a GET stream opened after the question, when nothing else would reach the client', async () => {
    const mcp = await rawSession({ elicitation: {}, tasks: { requests: { elicitation: { create: {} } } } });
    const taskId = await startTool(mcp, 'ask_human', { question: 'Late stream?' });
    await waitForStatus(mcp, taskId, 'input_required');
    const stream = await mcp.openGetStream();
    const question = await stream.nextMessageWhere((message) => message.method === 'elicitation/create');
    expect(question.params.task.ttl).toBeGreaterThan(0);
    expect(question.params.message).toBe('Late stream?');
    // Answering plainly (not as a task) is accepted too.
    expect((await answer(mcp, question.id, { action: 'accept', content: { answer: 'seen' } })).status).toBe(202);
    await waitForStatus(mcp, taskId, 'completed');
    await stream.close();
  });

  it('cancels a client task created for a question that was already answered', async () => {
    const mcp = await rawSession({ elicitation: {}, tasks: { cancel: {}, requests: { elicitation: { create: {} } } } });
    const stream = await mcp.openGetStream();
    await stream.next();
    const taskId = await startTool(mcp, 'ask_human', { question: 'Twice?' });
    const question = await stream.nextMessageWhere((message) => message.method === 'elicitation/create');
    // A session is sent one copy at a time: the second copy goes to another session of the same person.
    const other = await rawSession({ elicitation: {}, tasks: { cancel: {}, requests: { elicitation: { create: {} } } } });
    const otherStream = await other.openGetStream();
    await otherStream.next();
    const { reader } = await resultStream(other, taskId);
    const second = await reader.nextMessage();
    const now = new Date().toISOString();
    const clientTask = (id: string) => ({ task: { taskId: id, status: 'working', createdAt: now, lastUpdatedAt: now, ttl: 60000 } });
    expect((await answer(mcp, question.id, clientTask('client-task-1'))).status).toBe(202);
    expect((await answer(other, second!.id, clientTask('client-task-2'))).status).toBe(202);
    // On the stream the question went on, which that client reads.
    const cancel = await reader.nextMessageWhere((message) => message.method === 'tasks/cancel');
    await otherStream.close();
    expect(cancel.params).toEqual({ taskId: 'client-task-2' });
    expect(server.db().prepare('SELECT client_task_id FROM task_inputs WHERE task_id = ?').get(taskId)).toEqual({ client_task_id: 'client-task-1' });
    await mcp.call('tasks/cancel', { taskId });
    await stream.close();
  });

  it('sends no tasks/cancel to a client that did not declare tasks.cancel', async () => {
    const mcp = await rawSession({ elicitation: {}, tasks: { requests: { elicitation: { create: {} } } } });
    const first = await mcp.openGetStream();
    const taskId = await startTool(mcp, 'ask_human', { question: 'Twice, no cancel?' });
    const question = await nextMatching(first, (message) => message.method === 'elicitation/create');
    await first.close();
    // A fresh GET stream asks the open question again, with a new id.
    const stream = await mcp.openGetStream();
    const second = await nextMatching(stream, (message) => message.method === 'elicitation/create');
    expect(second!.id).not.toBe(question!.id);
    const now = new Date().toISOString();
    const clientTask = (id: string) => ({ task: { taskId: id, status: 'working', createdAt: now, lastUpdatedAt: now, ttl: 60000 } });
    expect((await answer(mcp, question!.id, clientTask('client-task-a'))).status).toBe(202);
    expect((await answer(mcp, second!.id, clientTask('client-task-b'))).status).toBe(202);
    await mcp.call('tasks/cancel', { taskId });
    // Everything for this session is written in order: a tasks/cancel would come before the status.
    const seen: any[] = [];
    const cancelled = await nextMatching(stream, (message) => {
      seen.push(message);
      return message.method === 'notifications/tasks/status' && message.params.status === 'cancelled';
    });
    expect(cancelled).not.toBeNull();
    expect(seen.filter((message) => message.method === 'tasks/cancel')).toEqual([]);
    await stream.close();
  });

  it('calls tasks/result on a client task that needs input, and takes its result as the answer', async () => {
    const mcp = await rawSession({ elicitation: {}, tasks: { cancel: {}, requests: { elicitation: { create: {} } } } });
    const stream = await mcp.openGetStream();
    const taskId = await startTool(mcp, 'ask_human', { question: 'Needs your input?' });
    const question = await nextMatching(stream, (message) => message.method === 'elicitation/create');
    const now = new Date().toISOString();
    const clientTask = { taskId: 'client-task-input', status: 'working', createdAt: now, lastUpdatedAt: now, ttl: 60000, pollInterval: 250 };
    expect((await answer(mcp, question!.id, { task: clientTask })).status).toBe(202);
    const poll = await nextMatching(stream, (message) => message.method === 'tasks/get');
    expect(poll!.params).toEqual({ taskId: 'client-task-input' });
    expect((await answer(mcp, poll!.id, { ...clientTask, status: 'input_required' })).status).toBe(202);
    const fetch = await nextMatching(stream, (message) => message.method === 'tasks/result' || message.method === 'tasks/get');
    expect(fetch!.method).toBe('tasks/result');
    expect(fetch!.params).toEqual({ taskId: 'client-task-input' });
    expect((await answer(mcp, fetch!.id, { action: 'accept', content: { answer: 'after my own question' } })).status).toBe(202);
    await waitForStatus(mcp, taskId, 'completed');
    const result = await mcp.call('tasks/result', { taskId });
    expect(result.content[0].text).toBe('Answer (given in the MCP client): after my own question');
    await stream.close();
  });

  it("cancels the client's task when the server's task is cancelled", async () => {
    let clientTaskId = '';
    const { client, transport, store } = await taskClient((_taskStore, taskId) => {
      clientTaskId = taskId;
    });
    try {
      const started = await client.experimental.tasks.callToolStream({ name: 'ask_human', arguments: { question: 'Never answered' } }, CallToolResultSchema, { task: {} }).next();
      const taskId = (started.value as any).task.taskId;
      await expect.poll(() => clientTaskId, { timeout: 10_000 }).not.toBe('');
      await client.experimental.tasks.cancelTask(taskId);
      await expect.poll(async () => (await store.getTask(clientTaskId))?.status, { timeout: 10_000 }).toBe('cancelled');
    } finally {
      await transport.terminateSession().catch(() => {});
      await client.close();
    }
  });
});

describe('questions over raw HTTP', () => {
  it('asks on the tasks/result stream with related-task _meta, takes the answer with 202, then delivers the result there', async () => {
    const mcp = await rawSession();
    const taskId = await startTool(mcp, 'ask_human', { question: 'Ship it?' });
    await waitForStatus(mcp, taskId, 'input_required');
    const task = await mcp.call('tasks/get', { taskId });
    expect(task.statusMessage).toBe(`Waiting for input: Ship it? (answer it in the dashboard: ${server.url}/tasks/${taskId}, or in an MCP client that supports elicitation)`);

    const { reader, id } = await resultStream(mcp, taskId);
    const question = await reader.nextMessage();
    expect(question).toMatchObject({
      jsonrpc: '2.0',
      method: 'elicitation/create',
      params: { message: 'Ship it?', requestedSchema: { type: 'object', required: ['answer'] }, _meta: { 'io.modelcontextprotocol/related-task': { taskId } } },
    });
    expect(question!.id).toMatch(/^input:/);
    const reply = await answer(mcp, question!.id, { action: 'accept', content: { answer: 'yes' } });
    expect(reply.status).toBe(202);
    expect(await reply.text()).toBe('');
    const final = await reader.nextMessage();
    expect(final).toMatchObject({ id, result: { content: expect.arrayContaining([{ type: 'text', text: 'Answer (given in the MCP client): yes' }]) } });
    expect(final!.result._meta['io.modelcontextprotocol/related-task']).toEqual({ taskId });
    expect(await reader.nextMessage()).toBeNull();
  });

  it('asks again on a new tasks/result stream after a dropped one, once per stream', async () => {
    const mcp = await rawSession();
    const taskId = await startTool(mcp, 'survey', { questions: ['First?', 'Second?'] });
    const first = await resultStream(mcp, taskId);
    const firstQuestions = [await first.reader.nextMessage(), await first.reader.nextMessage()];
    expect(firstQuestions.map((message) => message!.params.message).sort()).toEqual(['First?', 'Second?']);
    await first.reader.close();

    const second = await resultStream(mcp, taskId);
    const again = [await second.reader.nextMessage(), await second.reader.nextMessage()];
    expect(again.map((message) => message!.params.message).sort()).toEqual(['First?', 'Second?']);
    expect(again.map((message) => message!.id)).not.toContain(firstQuestions[0]!.id);

    // Answering one question wakes the stream; the other, still open, is not sent twice.
    const firstOne = again.find((message) => message!.params.message === 'First?')!;
    expect((await answer(mcp, firstOne.id, { action: 'accept', content: { answer: 'one' } })).status).toBe(202);
    await expect(second.reader.nextMessage(800)).rejects.toThrow(/timed out/);
    expect((await mcp.call('tasks/get', { taskId })).status).toBe('input_required');

    const secondOne = again.find((message) => message!.params.message === 'Second?')!;
    expect((await answer(mcp, secondOne.id, { action: 'decline' })).status).toBe(202);
    const final = await second.reader.nextMessage();
    expect(final!.result.content[0].text).toBe('1. First? one\n2. Second? (declined)');
  });

  it('refuses an answer that does not fit the question with 400 and keeps the question open', async () => {
    const mcp = await rawSession();
    const taskId = await startTool(mcp, 'ask_human', { question: 'Pick', choices: ['a', 'b'] });
    const { reader } = await resultStream(mcp, taskId);
    const question = await reader.nextMessage();
    for (const bad of [{ action: 'accept', content: { answer: 'c' } }, { action: 'accept', content: {} }, { action: 'maybe' }, { action: 'accept', content: { answer: 'a', extra: 1 } }]) {
      const reply = await answer(mcp, question!.id, bad);
      expect(reply.status).toBe(400);
      const body = await reply.json();
      expect(body.error.code).toBe(-32602);
      expect(body.error.message).toMatch(/answer|action|extra/);
    }
    expect((await mcp.call('tasks/get', { taskId })).status).toBe('input_required');
    expect((await answer(mcp, question!.id, { action: 'accept', content: { answer: 'b' } })).status).toBe(202);
    expect((await reader.nextMessage())!.result.structuredContent.content).toEqual({ answer: 'b' });
  });

  it('also asks on the GET stream, where an answer resumes the task with nobody calling tasks/result', async () => {
    const mcp = await rawSession();
    const stream = await mcp.openGetStream();
    await stream.next();
    const taskId = await startTool(mcp, 'ask_human', { question: 'From the GET stream?' });
    const question = await stream.nextMessageWhere((message) => message.method === 'elicitation/create');
    expect(question.params._meta['io.modelcontextprotocol/related-task']).toEqual({ taskId });
    expect((await answer(mcp, question.id, { action: 'accept', content: { answer: 'here' } })).status).toBe(202);
    await waitForStatus(mcp, taskId, 'completed');
    expect((await mcp.call('tasks/result', { taskId })).content[0].text).toBe('Answer (given in the MCP client): here');
    await stream.close();
  });

  it('asks an open question again on each fresh GET stream, never reusing a request id', async () => {
    const mcp = await rawSession();
    const taskId = await startTool(mcp, 'ask_human', { question: 'Which stream?' });
    await waitForStatus(mcp, taskId, 'input_required');
    const first = await mcp.openGetStream();
    const firstCopy = await nextMatching(first, (message) => message.method === 'elicitation/create');
    await first.close();
    const second = await mcp.openGetStream();
    const secondCopy = await nextMatching(second, (message) => message.method === 'elicitation/create');
    expect(secondCopy!.params.message).toBe('Which stream?');
    expect(secondCopy!.id).not.toBe(firstCopy!.id);
    expect((await answer(mcp, secondCopy!.id, { action: 'accept', content: { answer: 'the second' } })).status).toBe(202);
    // Every other copy this session was sent is withdrawn; the answered one is not.
    const withdrawn = await nextMatching(second, (message) => message.method === 'notifications/cancelled' && message.params.requestId === firstCopy!.id);
    expect(withdrawn).not.toBeNull();
    await waitForStatus(mcp, taskId, 'completed');
    const sent = server
      .db()
      .prepare("SELECT json_extract(message, '$.params.requestId') AS id FROM session_messages WHERE session_id = ? AND json_extract(message, '$.method') = 'notifications/cancelled'")
      .all(mcp.sessionId) as Array<{ id: string }>;
    expect(sent.map((row) => row.id)).not.toContain(secondCopy!.id);
    await second.close();
  });

  it('asks a question once when the GET stream opens while the question is being asked, and a tasks/result stream follows', async () => {
    // The GET stream asks the open questions as it opens, while the new question is relayed to it: each
    // try opens the stream a little later against the tool's first question (an SDK client opens its GET
    // stream as it starts a task). Every copy sent before the task's completion notice is counted.
    const copiesPerTry: number[] = [];
    for (let attempt = 0; attempt < 20; attempt += 1) {
      const mcp = await rawSession({ sampling: {} });
      const [stream, started] = await Promise.all([
        sleep(attempt % 7).then(() => mcp.openGetStream()),
        mcp.call('tools/call', { name: 'summarize', arguments: { text: `Try ${attempt}` }, task: {} }),
      ]);
      const taskId: string = started.task.taskId;
      const { reader } = await resultStream(mcp, taskId);
      const copies: string[] = [];
      let answered: Promise<Response> | undefined;
      const take = (message: Record<string, any>) => {
        if (message.method !== 'sampling/createMessage') return;
        copies.push(message.id);
        answered ??= answer(mcp, message.id, { role: 'assistant', content: { type: 'text', text: 'Done.' }, model: 'm' });
      };
      const onGet = (async () => {
        for (;;) {
          const message = await stream.nextMessage();
          if (!message || (message.method === 'notifications/tasks/status' && message.params.status === 'completed')) return;
          take(message);
        }
      })();
      for (let message = await reader.nextMessage(); message && message.method; message = await reader.nextMessage()) take(message);
      await onGet;
      expect((await answered)!.status).toBe(202);
      copiesPerTry.push(copies.length);
      await stream.close();
    }
    expect(copiesPerTry).toEqual(copiesPerTry.map(() => 1));
  });

  it('grants a question the hours a person needs, whatever shorter ttl the client asks', async () => {
    const mcp = await rawSession();
    const { task } = await mcp.call('tools/call', { name: 'ask_human', arguments: { question: 'Take your time?' }, task: { ttl: 60_000 } });
    expect(task.ttl).toBe(8 * 60 * 60 * 1000);
    expect((await mcp.call('tasks/get', { taskId: task.taskId })).ttl).toBe(8 * 60 * 60 * 1000);
    await mcp.call('tasks/cancel', { taskId: task.taskId });
  });

  it('withdraws the other copies of an answered question and ignores their late answers', async () => {
    const mcp = await rawSession();
    const stream = await mcp.openGetStream();
    await stream.next();
    const taskId = await startTool(mcp, 'ask_human', { question: 'Which copy?' });
    const getCopy = await stream.nextMessageWhere((message) => message.method === 'elicitation/create');
    // A session is sent one copy at a time: the second copy goes to another session of the same person.
    const other = await rawSession();
    const { reader, id } = await resultStream(other, taskId);
    const resultCopy = await reader.nextMessage();
    expect(resultCopy!.id).not.toBe(getCopy.id);

    expect((await answer(mcp, getCopy.id, { action: 'accept', content: { answer: 'get' } })).status).toBe(202);
    const withdrawal = await reader.nextMessage();
    expect(withdrawal).toMatchObject({
      method: 'notifications/cancelled',
      params: { requestId: resultCopy!.id, _meta: { 'io.modelcontextprotocol/related-task': { taskId } } },
    });
    const final = await reader.nextMessage();
    expect(final).toMatchObject({ id, result: { structuredContent: { content: { answer: 'get' } } } });
    expect((await answer(other, resultCopy!.id, { action: 'accept', content: { answer: 'late' } })).status).toBe(202);
    expect((await mcp.call('tasks/result', { taskId })).structuredContent.content).toEqual({ answer: 'get' });
    await stream.close();
  });

  it('sends questions only to clients that declared elicitation', async () => {
    const mcp = await rawSession({});
    const stream = await mcp.openGetStream();
    await stream.next();
    const taskId = await startTool(mcp, 'ask_human', { question: 'Anyone?' });
    await waitForStatus(mcp, taskId, 'input_required');
    const { reader } = await resultStream(mcp, taskId);
    await expect(reader.nextMessage(800)).rejects.toThrow(/timed out/);
    const onGetStream: string[] = [];
    await expect(
      (async () => {
        for (;;) onGetStream.push(String((await stream.nextMessage(300))?.method));
      })(),
    ).rejects.toThrow(/timed out/);
    expect(onGetStream).toEqual(['notifications/tasks/status']);
    await mcp.call('tasks/cancel', { taskId });
    expect((await reader.nextMessage())!.error.message).toMatch(/cancelled/);
    await stream.close();
  });

  it('takes exactly one of two answers sent at the same moment, every time', async () => {
    const mcp = await rawSession();
    const stream = await mcp.openGetStream();
    await stream.next();
    const other = await rawSession();
    for (let round = 0; round < 12; round += 1) {
      const taskId = await startTool(mcp, 'ask_human', { question: `Race ${round}` });
      const getCopy = await stream.nextMessageWhere((message) => message.method === 'elicitation/create');
      const { reader } = await resultStream(other, taskId);
      const resultCopy = await reader.nextMessage();
      const replies = await Promise.all([
        answer(mcp, getCopy.id, { action: 'accept', content: { answer: 'get' } }),
        answer(other, resultCopy!.id, { action: 'accept', content: { answer: 'result' } }),
      ]);
      expect(replies.map((reply) => reply.status)).toEqual([202, 202]);
      const final = await reader.nextMessageWhere((message) => 'result' in message);
      const winner = final.result.structuredContent.content.answer;
      expect(['get', 'result']).toContain(winner);
      const row = server.db().prepare('SELECT status, answered_via, response FROM task_inputs WHERE task_id = ?').get(taskId) as any;
      expect(row.status).toBe('answered');
      expect(row.answered_via).toBe(winner === 'get' ? getCopy.id : resultCopy!.id);
      const resumes = server.db().prepare("SELECT count(*) AS n FROM task_events WHERE task_id = ? AND from_status = 'input_required' AND to_status = 'working'").get(taskId);
      expect(resumes).toEqual({ n: 1 });
      expect(server.db().prepare('SELECT attempt FROM tasks WHERE id = ?').get(taskId)).toEqual({ attempt: 1 });
    }
    await stream.close();
  });
});

describe('a client that takes only URL-mode elicitation', () => {
  const linkOnly = { elicitation: { url: {} } };
  const relatedTask = (taskId: string) => ({ 'io.modelcontextprotocol/related-task': { taskId } });
  const openInput = (taskId: string) => server.db().prepare("SELECT id FROM task_inputs WHERE task_id = ? AND status = 'pending'").get(taskId) as { id: string } | undefined;
  const linkMessage = (question: string) => `${question} (answer it on the task's page in the dashboard)`;

  it("is sent a link to the task's page built from APP_URL; its accept answers nothing, and the link is completed before the dashboard's answer arrives", async () => {
    // The client reaches the server by another name than APP_URL's (localhost), and forwarded headers name a third.
    const mcp = new RawMcp(server.mcpUrl.replace('//localhost:', '//127.0.0.1:'), token);
    await mcp.initialize('2025-11-25', linkOnly);
    const forwarded = { 'X-Forwarded-Host': 'attacker.example', 'X-Forwarded-Proto': 'https' };
    const { task } = await mcp.call('tools/call', { name: 'ask_human', arguments: { question: 'Deploy on Friday?' }, task: {} });
    const taskId: string = task.taskId;
    const id = (resultCalls += 1);
    const response = await mcp.post({ jsonrpc: '2.0', id, method: 'tasks/result', params: { taskId } }, forwarded);
    const reader = new SseReader(response);
    const link = await reader.nextMessage();
    const input = openInput(taskId)!;
    expect(link).toMatchObject({ method: 'elicitation/create', id: expect.stringMatching(/^input:/) });
    expect(link!.params).toEqual({
      mode: 'url',
      elicitationId: input.id,
      url: `${server.url}/tasks/${taskId}`,
      message: linkMessage('Deploy on Friday?'),
      _meta: relatedTask(taskId),
    });

    expect((await answer(mcp, link!.id, { action: 'accept' })).status).toBe(202);
    // Consent to open the page is no answer: the question stays open, and no stream sends the link again.
    expect(openInput(taskId)).toEqual(input);
    expect((await mcp.call('tasks/get', { taskId })).status).toBe('input_required');
    const again = await resultStream(mcp, taskId);
    await expect(again.reader.nextMessage(800)).rejects.toThrow(/timed out/);

    await answerInDashboard(server, 'ada@example.com', taskId, 'Not on a Friday');
    expect(await reader.nextMessage()).toEqual({ jsonrpc: '2.0', method: 'notifications/elicitation/complete', params: { elicitationId: input.id, _meta: relatedTask(taskId) }, __eventId: expect.any(String) });
    const final = await reader.nextMessage();
    expect(final).toMatchObject({ id, result: { structuredContent: { action: 'accept', answeredBy: 'dashboard', content: { answer: 'Not on a Friday' } } } });
    await again.reader.close();
  });

  it('is sent the link on its GET stream, not again on a fresh one once accepted, and told there when the person answered', async () => {
    const mcp = await rawSession(linkOnly);
    const first = await mcp.openGetStream();
    await first.next();
    const taskId = await startTool(mcp, 'ask_human', { question: 'Which region?' });
    const link = await first.nextMessageWhere((message) => message.method === 'elicitation/create');
    const input = openInput(taskId)!;
    expect(link.params).toMatchObject({ mode: 'url', elicitationId: input.id, url: `${server.url}/tasks/${taskId}`, message: linkMessage('Which region?') });
    expect((await answer(mcp, link.id, { action: 'accept' })).status).toBe(202);
    await first.close();

    const second = await mcp.openGetStream();
    await second.next();
    await answerInDashboard(server, 'ada@example.com', taskId, 'eu-west');
    const next = await second.nextMessageWhere((message) => message.method === 'elicitation/create' || message.method === 'notifications/elicitation/complete');
    expect(next).toMatchObject({ method: 'notifications/elicitation/complete', params: { elicitationId: input.id, _meta: relatedTask(taskId) } });
    await waitForStatus(mcp, taskId, 'completed');
    expect((await mcp.call('tasks/result', { taskId })).structuredContent).toEqual({ action: 'accept', answeredBy: 'dashboard', content: { answer: 'eu-west' } });
    await second.close();
  });

  it('is asked in form mode when it declares both modes', async () => {
    const mcp = await rawSession({ elicitation: { form: {}, url: {} } });
    const taskId = await startTool(mcp, 'ask_human', { question: 'Form or link?' });
    const { reader } = await resultStream(mcp, taskId);
    const question = await reader.nextMessage();
    expect(question!.params).toMatchObject({ message: 'Form or link?', requestedSchema: { type: 'object' } });
    expect(question!.params).not.toHaveProperty('url');
    expect(question!.params.mode).not.toBe('url');
    await mcp.call('tasks/cancel', { taskId });
  });

  it('gets the link with the official SDK client on a plain call, and its decline on a task is the answer', async () => {
    const { client, close } = await connectSdkClient(server.mcpUrl, token, { capabilities: linkOnly, name: 'link-only-sdk' });
    const links: any[] = [];
    const completed: string[] = [];
    let reply = { action: 'accept' };
    client.setRequestHandler(ElicitRequestSchema, async (request) => {
      links.push(request.params);
      return reply as any;
    });
    client.setNotificationHandler(ElicitationCompleteNotificationSchema, async (notification) => {
      completed.push(notification.params.elicitationId);
    });
    try {
      const call = client.callTool({ name: 'ask_human', arguments: { question: 'Open the page?' } });
      await expect.poll(() => links.length, { timeout: 10_000 }).toBe(1);
      const taskId = String(links[0].url).split('/tasks/')[1];
      // A plain call's client knows no task: nothing names it but the link.
      expect(links[0]).toEqual({ mode: 'url', elicitationId: openInput(taskId)!.id, url: `${server.url}/tasks/${taskId}`, message: linkMessage('Open the page?') });
      await answerInDashboard(server, 'ada@example.com', taskId, 'opened');
      const result: any = await call;
      expect(result.structuredContent).toEqual({ action: 'accept', answeredBy: 'dashboard', content: { answer: 'opened' } });
      expect(completed).toEqual([links[0].elicitationId]);

      reply = { action: 'decline' };
      const messages = await runToEnd(client, { question: 'Shall I?' });
      expect(links).toHaveLength(2);
      expect(links[1]).toMatchObject({ mode: 'url', _meta: relatedTask(messages[0].task.taskId) });
      expect(messages.at(-1).result.structuredContent).toEqual({ action: 'decline', answeredBy: 'client' });
    } finally {
      await close();
    }
  });
});

describe('a question across a restart', () => {
  it('stays open, and answering it resumes the tool without asking again', async () => {
    const mcp = await rawSession();
    const taskId = await startTool(mcp, 'ask_human', { question: 'Still there?' });
    await waitForStatus(mcp, taskId, 'input_required');
    await server.kill9();
    await server.restart();
    expect((await mcp.call('tasks/get', { taskId })).status).toBe('input_required');
    const { reader } = await resultStream(mcp, taskId);
    const question = await reader.nextMessage();
    expect(question!.params.message).toBe('Still there?');
    expect((await answer(mcp, question!.id, { action: 'accept', content: { answer: 'yes' } })).status).toBe(202);
    const final = await reader.nextMessage();
    expect(final!.result.content[0].text).toBe('Answer (given in the MCP client): yes');
    expect(server.db().prepare('SELECT count(*) AS n FROM task_inputs WHERE task_id = ?').get(taskId)).toEqual({ n: 1 });
    expect(server.db().prepare('SELECT attempt FROM tasks WHERE id = ?').get(taskId)).toEqual({ attempt: 2 });
  });
});
