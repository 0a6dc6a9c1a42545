import fs from 'node:fs';
import path from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { expect, signUpWithToken, testWithServer } from '../fixtures';
import { axeViolations } from '../helpers/axe';
import { connectSdkClient, sleep } from '../helpers/mcp';

/**
 * A call of an upstream tool listed in `approve` waits for its person, who sees the server, the tool and
 * every argument in full, and approves or denies it in the browser; the MCP client gets the outcome.
 */

const screenshots = path.join(__dirname, '..', '..', 'test-results', 'screenshots');
const everything = path.resolve(__dirname, '..', '..', 'node_modules', '@modelcontextprotocol', 'server-everything', 'dist', 'index.js');
// One fixed path: Playwright loads this file in each of its processes, and each writes the same file.
const serversFile = path.join(__dirname, '..', '..', 'test-results', 'approvals', 'servers.json');
fs.mkdirSync(path.dirname(serversFile), { recursive: true });
fs.writeFileSync(serversFile, JSON.stringify({ mcpServers: { everything: { command: process.execPath, args: [everything, 'stdio'], approve: ['echo'] } } }));

const test = testWithServer({ MCP_SERVERS_FILE: serversFile });

/** The upstream comes up with the server's runtime: its tools are listed once it is up. */
async function untilListed(client: Client, name: string) {
  const deadline = Date.now() + 40_000;
  while (!(await client.listTools()).tools.some((tool) => tool.name === name)) {
    if (Date.now() > deadline) throw new Error(`${name} was never listed`);
    await sleep(200);
  }
}

/** Calls the tool as a task and collects what the client is sent until its result. */
function callAsTask(client: Client, name: string, args: Record<string, unknown>) {
  const messages: any[] = [];
  const done = (async () => {
    for await (const message of client.experimental.tasks.callToolStream({ name, arguments: args }, CallToolResultSchema, { task: {}, timeout: 120_000 })) {
      messages.push(message);
    }
    return messages;
  })();
  return { messages, done };
}

test('a person sees the call in full in the inbox, approves it, and the client gets the result', async ({ page, ownServer }) => {
  const token = await signUpWithToken(page, 'approver');
  const sdk = await connectSdkClient(ownServer.mcpUrl, token, { name: 'agent' });
  try {
    await untilListed(sdk.client, 'everything__echo');
    // Long enough that a cut would show: every character must be there to be approved.
    const message = `Deploy build 4711 to production, then ${'notify every subscriber, '.repeat(20)}and stop.`;
    const call = callAsTask(sdk.client, 'everything__echo', { message });

    await page.getByRole('link', { name: 'Inbox' }).click();
    await expect(page.getByTestId('inbox-count')).toHaveText('1');
    const approval = page.getByRole('form', { name: 'Approve echo on everything?' });
    await expect(approval).toBeVisible();
    await expect(page.getByTestId('approval-server')).toHaveText('everything');
    await expect(page.getByTestId('approval-tool')).toHaveText('echo');
    await expect(page.getByRole('region', { name: 'Arguments of echo' })).toHaveText(JSON.stringify({ message }, null, 2));
    await page.screenshot({ path: path.join(screenshots, 'approval.png'), fullPage: true });
    expect(await axeViolations(page)).toEqual([]);

    await approval.getByRole('button', { name: 'Approve', exact: true }).click();
    const messages = await call.done;
    const final = messages.at(-1);
    expect(final.type).toBe('result');
    expect(final.result.content).toEqual([{ type: 'text', text: `Echo: ${message}` }]);
    await expect(page.getByText('No questions waiting.')).toBeVisible();

    // The task's page keeps who approved it, and when, in its timeline.
    const taskId = messages[0].task.taskId;
    await page.goto(`/tasks/${taskId}`);
    const email = (await page.locator('header span[title]').getAttribute('title'))!;
    await expect(page.getByText(`Approved in the dashboard by ${email}`)).toBeVisible();
    await expect(page.getByRole('list', { name: 'Timeline' })).toContainText(`Approved by ${email} in the dashboard; working.`);
  } finally {
    await sdk.close();
  }
});

test('a person denies a call on its task page, and the client gets an error result naming them', async ({ page, ownServer }) => {
  const token = await signUpWithToken(page, 'denier');
  const sdk = await connectSdkClient(ownServer.mcpUrl, token, { name: 'agent' });
  try {
    await untilListed(sdk.client, 'everything__echo');
    const call = callAsTask(sdk.client, 'everything__echo', { message: 'drop every table', force: true });
    await expect.poll(() => call.messages[0]?.task?.taskId).toBeTruthy();
    const taskId = call.messages[0].task.taskId;

    await page.goto(`/tasks/${taskId}`);
    await expect(page.getByTestId('status-message')).toHaveText(`Waiting for a person to approve echo on everything in the dashboard: ${ownServer.url}/tasks/${taskId}`);
    await expect(page.getByRole('region', { name: 'Arguments of echo' })).toHaveText(JSON.stringify({ message: 'drop every table', force: true }, null, 2));
    // The SDK client fetches tasks/result once its poll has seen the task wait for input; a task it first
    // sees failed it reports as an error without asking for the result. Deny once the client is waiting.
    await expect.poll(() => call.messages.some((message) => message.type === 'taskStatus' && message.task.status === 'input_required'), { timeout: 10_000 }).toBe(true);
    await page.getByRole('form', { name: 'Approve echo on everything?' }).getByRole('button', { name: 'Deny', exact: true }).click();

    const email = (await page.locator('header span[title]').getAttribute('title'))!;
    const denied = [{ type: 'text', text: `Denied by ${email} in the dashboard: everything did not run echo.` }];
    const final = (await call.done).at(-1);
    expect(final.type).toBe('result');
    expect(final.result.isError).toBe(true);
    expect(final.result.content).toEqual(denied);
    // A client that asks only now is given the same result.
    expect((await sdk.client.experimental.tasks.getTaskResult(taskId, CallToolResultSchema)).content).toEqual(denied);
    await expect(page.getByText(`Denied in the dashboard by ${email}`)).toBeVisible();
  } finally {
    await sdk.close();
  }
});
