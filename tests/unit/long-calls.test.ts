import { describe, expect, it } from 'vitest';
import { admittingEarlyAnswers, answerWindowFor, stillRunningResult } from '@/lib/mcp/core/long-calls';

describe('the answer window of a client', () => {
  const byClient = new Map([
    ['claude-ai', 50_000],
    ['claude-ai (via mcp-remote', 40_000],
    ['claude-code', 540_000],
  ]);

  it('is the one set for its name, whatever its case, or for the longest set name it starts with, or the default', () => {
    expect(answerWindowFor('Claude-Code', byClient, 45_000)).toBe(540_000);
    expect(answerWindowFor('claude-ai', byClient, 45_000)).toBe(50_000);
    expect(answerWindowFor('claude-ai (via mcp-remote 0.15.1)', byClient, 45_000)).toBe(40_000);
    expect(answerWindowFor('claude-ai-beta', byClient, 45_000)).toBe(50_000);
    expect(answerWindowFor('cursor', byClient, 45_000)).toBe(45_000);
    expect(answerWindowFor('claude', byClient, 45_000)).toBe(45_000);
    expect(answerWindowFor(null, byClient, 45_000)).toBe(45_000);
    expect(answerWindowFor('claude-code', new Map(), 0)).toBe(0);
  });
});

describe('the early answer', () => {
  const task = { id: 't-1', status: 'input_required' as const, statusMessage: 'Waiting for an answer: Ship it?', createdAt: 0, lastUpdatedAt: 0, ttlMs: 1000, expiresAt: 1000, pollIntervalMs: 2500 };

  it('says the same in words and in structuredContent, with the page where a person can answer', () => {
    const result = stillRunningResult(task, 'https://tasks.example/tasks/t-1', 45_000);
    expect(result.structuredContent).toEqual({ taskId: 't-1', status: 'input_required', statusMessage: 'Waiting for an answer: Ship it?', pollAfterSeconds: 3 });
    const [words, json] = result.content as unknown as Array<{ text: string }>;
    expect(words.text).toContain('task t-1 (input_required)');
    expect(words.text).toContain('https://tasks.example/tasks/t-1');
    expect(words.text).toContain('task_result with {"taskId": "t-1"}');
    expect(words.text).toContain('up to 45 s');
    expect(JSON.parse(json.text)).toEqual(result.structuredContent);
    expect(result.isError).toBeUndefined();
  });

  it('fits the outputSchema a tool is listed with, which keeps its own as the first choice', () => {
    const own = { $schema: 'https://json-schema.org/draft/2020-12/schema', type: 'object', properties: { answer: { type: 'string' } }, required: ['answer'] };
    const listed = admittingEarlyAnswers({ name: 'x', description: 'x', inputSchema: {}, outputSchema: own } as never) as { outputSchema: any };
    expect(listed.outputSchema.$schema).toBe(own.$schema);
    expect(listed.outputSchema.anyOf[0]).toEqual({ type: 'object', properties: { answer: { type: 'string' } }, required: ['answer'] });
    expect(listed.outputSchema.anyOf[1].required).toEqual(['taskId', 'status', 'pollAfterSeconds']);
    const plain = { name: 'y', description: 'y', inputSchema: {} } as never;
    expect(admittingEarlyAnswers(plain)).toBe(plain);
  });
});
