import { LoggingMessageNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectSdkClient, RawMcp, SseReader } from '../helpers/mcp';
import { createToken, startServer, type TestServer } from '../helpers/server';

let server: TestServer;
let token: string;

beforeAll(async () => {
  server = await startServer({ MCP_FIXTURE_TOOLS: '1' });
  token = createToken(server, 'logs@example.com');
});

afterAll(async () => {
  await server?.stop();
});

const everyLevel = ['debug', 'info', 'notice', 'warning', 'error', 'critical', 'alert', 'emergency'];

async function session(): Promise<RawMcp> {
  const mcp = new RawMcp(server.mcpUrl, token);
  await mcp.initialize();
  return mcp;
}

/** A request's SSE response: the messages sent before the response, and the response. */
async function callCollecting(mcp: RawMcp, id: number, name: string): Promise<{ before: Record<string, any>[]; reply: Record<string, any> }> {
  const response = await mcp.post({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: {} } });
  expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
  const reader = new SseReader(response);
  const before: Record<string, any>[] = [];
  for (;;) {
    const message = await reader.nextMessage();
    if (!message) throw new Error('the stream ended before the response');
    if (message.id === id && !('method' in message)) {
      await reader.close();
      return { before, reply: message };
    }
    before.push(message);
  }
}

const levelsLogged = (messages: Record<string, any>[]) =>
  messages.filter((message) => message.method === 'notifications/message').map((message) => message.params.level);

const storedLevel = (mcp: RawMcp) =>
  (server.db().prepare('SELECT log_level FROM mcp_sessions WHERE id = ?').get(mcp.sessionId) as { log_level: string | null }).log_level;

describe('with the official SDK client', () => {
  it('offers logging, and a plain call carries its log messages before its result', async () => {
    const { client, close } = await connectSdkClient(server.mcpUrl, token);
    try {
      expect(client.getServerCapabilities()?.logging).toEqual({});
      const logs: unknown[] = [];
      client.setNotificationHandler(LoggingMessageNotificationSchema, (notification) => void logs.push(notification.params));
      await client.setLoggingLevel('debug');
      const result = await client.callTool({ name: 'test_tool_with_logging', arguments: {} });
      expect(result.content).toEqual([{ type: 'text', text: 'Tool with logging executed successfully.' }]);
      expect(logs).toEqual([
        { level: 'info', logger: 'test_tool_with_logging', data: 'Tool execution started' },
        { level: 'info', logger: 'test_tool_with_logging', data: 'Tool processing data' },
        { level: 'info', logger: 'test_tool_with_logging', data: 'Tool execution completed' },
      ]);
    } finally {
      await close();
    }
  });

  it('sends the levels at or above the one set, and a new level holds for the next call at once', async () => {
    const { client, close } = await connectSdkClient(server.mcpUrl, token);
    try {
      const logs: Array<{ level: string; data: unknown; logger?: string }> = [];
      client.setNotificationHandler(LoggingMessageNotificationSchema, (notification) => void logs.push(notification.params));
      await client.setLoggingLevel('warning');
      await client.callTool({ name: 'fixture_log_every_level', arguments: {} });
      expect(logs.map((log) => log.level)).toEqual(['warning', 'error', 'critical', 'alert', 'emergency']);
      expect(logs[0]).toEqual({ level: 'warning', logger: 'fixture', data: { level: 'warning', note: 'a warning message' } });

      logs.length = 0;
      await client.setLoggingLevel('emergency');
      await client.callTool({ name: 'fixture_log_every_level', arguments: {} });
      expect(logs.map((log) => log.level)).toEqual(['emergency']);

      logs.length = 0;
      await client.setLoggingLevel('debug');
      await client.callTool({ name: 'fixture_log_every_level', arguments: {} });
      expect(logs.map((log) => log.level)).toEqual(everyLevel);
    } finally {
      await close();
    }
  });
});

describe('over raw HTTP', () => {
  it('sends every level until the client sets one, and keeps each session’s level apart', async () => {
    const quiet = await session();
    const chatty = await session();
    expect(await quiet.call('logging/setLevel', { level: 'error' })).toEqual({});
    expect(storedLevel(quiet)).toBe('error');
    expect(storedLevel(chatty)).toBeNull();

    const fromChatty = await callCollecting(chatty, 7, 'fixture_log_every_level');
    expect(fromChatty.reply.result.content).toEqual([{ type: 'text', text: 'Logged 8 messages.' }]);
    expect(levelsLogged(fromChatty.before)).toEqual(everyLevel);
    const fromQuiet = await callCollecting(quiet, 7, 'fixture_log_every_level');
    expect(levelsLogged(fromQuiet.before)).toEqual(['error', 'critical', 'alert', 'emergency']);
  });

  it('refuses a level that does not exist with -32602 and keeps the level it had', async () => {
    const mcp = await session();
    await mcp.call('logging/setLevel', { level: 'critical' });
    for (const params of [{ level: 'verbose' }, { level: 'INFO' }, { level: 3 }, { level: null }, {}, undefined]) {
      const reply = await mcp.request('logging/setLevel', params as Record<string, unknown> | undefined);
      expect(reply.status, JSON.stringify(params)).toBe(200);
      expect(reply.body.error.code, JSON.stringify(params)).toBe(-32602);
      expect(reply.body.error.message).toMatch(/level/);
    }
    expect(storedLevel(mcp)).toBe('critical');
    const { before } = await callCollecting(mcp, 9, 'fixture_log_every_level');
    expect(levelsLogged(before)).toEqual(['critical', 'alert', 'emergency']);
  });

  it('holds a plain call of a task tool to the level too', async () => {
    const mcp = await session();
    await mcp.call('logging/setLevel', { level: 'warning' });
    const { before, reply } = await callCollecting(mcp, 3, 'test_tool_with_logging');
    expect(reply.result.content).toEqual([{ type: 'text', text: 'Tool with logging executed successfully.' }]);
    expect(levelsLogged(before)).toEqual([]);
  });

  it('sends a task’s log messages on the session’s GET stream, naming the task', async () => {
    const mcp = await session();
    await mcp.call('logging/setLevel', { level: 'info' });
    const stream = await mcp.openGetStream();
    try {
      const { task } = await mcp.call('tools/call', { name: 'test_tool_with_logging', arguments: {}, task: {} });
      const logs = [];
      for (let i = 0; i < 3; i += 1) logs.push(await stream.nextMessageWhere((message) => message.method === 'notifications/message'));
      expect(logs.map((log) => log.params.data)).toEqual(['Tool execution started', 'Tool processing data', 'Tool execution completed']);
      for (const log of logs) {
        expect(log.params).toMatchObject({ level: 'info', logger: 'test_tool_with_logging' });
        expect(log.params._meta).toEqual({ 'io.modelcontextprotocol/related-task': { taskId: task.taskId } });
      }
      const result = await mcp.call('tasks/result', { taskId: task.taskId });
      expect(result.content).toEqual([{ type: 'text', text: 'Tool with logging executed successfully.' }]);
    } finally {
      await stream.close();
    }
  });
});

describe('closing a plain call’s stream (SSE polling)', () => {
  it('ends the connection mid-call, and the client resumes the stream with Last-Event-ID for the result', async () => {
    const mcp = await session();
    const response = await mcp.post({ jsonrpc: '2.0', id: 5, method: 'tools/call', params: { name: 'test_reconnection', arguments: {} } });
    expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
    // The server closes the stream before the tool returns: the whole body is what came until then.
    const firstPart = await response.text();
    expect(firstPart).not.toContain('"result"');
    const priming = /id: (\S+:\d+)\nretry: 1000\ndata: \n\n/.exec(firstPart);
    expect(priming, firstPart).not.toBeNull();

    const reader = await mcp.openGetStream(priming![1]);
    const reply = await reader.nextMessageWhere((message) => message.id === 5);
    expect(reply.result.content).toEqual([{ type: 'text', text: 'Reconnection test completed.' }]);
    expect(await reader.next()).toBeNull();
  });
});

