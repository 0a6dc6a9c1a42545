import fs from 'node:fs';
import path from 'node:path';
import { CallToolResultSchema, CreateTaskResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCluster, type Cluster } from '../helpers/cluster';
import { connectSdkClient, sleep } from '../helpers/mcp';
import { createToken } from '../helpers/server';
import { everythingOverStdio, pidsMarked, startEverythingOverHttp, writeServersFile } from '../helpers/upstreams';

/**
 * The servers file on two instances sharing PostgreSQL: each starts its own stdio servers, the instance
 * holding a task's lease makes its call, and one that takes a task over follows its upstream task.
 */
let cluster: Cluster;
let upstreamHttp: Awaited<ReturnType<typeof startEverythingOverHttp>>;
let serversFile: string;
let token: string;
const leaseMs = 3_000;

beforeAll(async () => {
  upstreamHttp = await startEverythingOverHttp();
  serversFile = writeServersFile({ local: everythingOverStdio('cluster-stdio'), remote: { url: upstreamHttp.url } });
  cluster = await startCluster({ instances: 2, env: { MCP_SERVERS_FILE: serversFile, TASK_LEASE_MS: String(leaseMs), TASK_POLL_INTERVAL_MS: '200' } });
  token = createToken(cluster.instances[0], 'ada@example.com');
  for (const instance of cluster.instances) {
    const deadline = Date.now() + 60_000;
    for (;;) {
      const { client, close } = await connectSdkClient(instance.mcpUrl, token);
      const names = (await client.listTools()).tools.map((tool) => tool.name);
      await close();
      if (names.includes('local__echo') && names.includes('remote__echo')) break;
      if (Date.now() > deadline) throw new Error('the servers did not come up');
      await sleep(250);
    }
  }
}, 180_000);

afterAll(async () => {
  await cluster?.stop();
  await upstreamHttp?.stop();
  if (serversFile) fs.rmSync(path.dirname(serversFile), { recursive: true, force: true });
});

const taskRow = (id: string) =>
  cluster.instances[1].db().prepare('SELECT status, runner, upstream_task_id AS "upstreamTaskId", result FROM tasks WHERE id = ?').get(id) as
    | { status: string; runner: string | null; upstreamTaskId: string | null; result: string | null }
    | undefined;

describe('the servers file on several instances', () => {
  it('starts a stdio server on every instance', () => {
    expect(pidsMarked('cluster-stdio')).toHaveLength(2);
  });

  it("has a task's upstream task followed by the instance that takes it over when its instance is killed with -9", async () => {
    const { client, close } = await connectSdkClient(cluster.instances[0].mcpUrl, token);
    let taskId: string;
    try {
      const created = await client.request(
        { method: 'tools/call', params: { name: 'remote__simulate-research-query', arguments: { topic: 'volcanoes' }, task: {} } },
        CreateTaskResultSchema,
      );
      taskId = created.task.taskId;
    } finally {
      await close();
    }
    await expect.poll(() => taskRow(taskId)?.upstreamTaskId, { timeout: 10_000 }).toMatch(/^[0-9a-f]{32}$/);
    const killedRunner = taskRow(taskId)!.runner;
    expect(killedRunner).not.toBeNull();
    await cluster.instances[0].kill9();
    const survivor = await connectSdkClient(cluster.instances[1].mcpUrl, token);
    try {
      const result = await survivor.client.experimental.tasks.getTaskResult(taskId, CallToolResultSchema, { timeout: 60_000 });
      expect((result.content as Array<{ text?: string }>)[0].text).toContain('# Research Report: volcanoes');
      const row = taskRow(taskId)!;
      expect(row.status).toBe('completed');
      expect(row.runner).not.toBe(killedRunner);
    } finally {
      await survivor.close();
    }
  }, 90_000);
});
