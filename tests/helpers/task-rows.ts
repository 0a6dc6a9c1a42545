import type { NewTaskRow } from '@/db/queries/tasks';

/** A working task's row as the engine would insert it for this user, held by `instance-a`. */
export function newTaskRow(userId: string, overrides: Partial<NewTaskRow> = {}): NewTaskRow {
  const now = Date.now();
  return {
    id: crypto.randomUUID(),
    userId,
    sessionId: null,
    clientName: 'counts',
    clientVersion: '1.0.0',
    protocolVersion: '2025-11-25',
    toolName: 'delay',
    arguments: { seconds: 1, note: 'ünïcödé "quoted"' },
    status: 'working',
    statusMessage: 'The task is working.',
    createdAt: now,
    ttlMs: 60_000,
    expiresAt: now + 60_000,
    pollIntervalMs: 1000,
    progressToken: 'token-1',
    invocation: 'task',
    callRequestId: null,
    runner: 'instance-a',
    leaseExpiresAt: now + 30_000,
    ...overrides,
  };
}
