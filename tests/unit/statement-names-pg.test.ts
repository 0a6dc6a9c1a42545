import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { useFreshPostgres } from '../helpers/postgres';

/**
 * Named statements on PostgreSQL (db/run.ts). The production server's bundle and the Next.js app's
 * chunks each hold a copy of the query layer, and both use the one pool of the process: a name must
 * stand for the same statement in every copy, or a connection refuses the second text under a name it
 * already holds.
 */
let close: () => Promise<void>;

beforeAll(async () => {
  // One connection: every statement of both copies is prepared on it.
  process.env.DATABASE_POOL_SIZE = '1';
  ({ close } = await useFreshPostgres());
});

afterAll(async () => {
  await close?.();
});

describe('named statements on PostgreSQL', () => {
  it('name a statement by its text, so two copies of the query layer share a connection', async () => {
    const first = await import('@/db/run');
    vi.resetModules();
    const second = await import('@/db/run');
    expect(second.postgresStatement).not.toBe(first.postgresStatement);
    // Each copy defines a different statement first, then the other's.
    const one = first.postgresStatement<{ n: number }>('SELECT 1 AS n');
    const two = second.postgresStatement<{ n: number }>('SELECT 2 AS n');
    const twoInFirst = first.postgresStatement<{ n: number }>('SELECT 2 AS n');
    const read = (run: typeof first, statement: typeof one) => run.defineQuery((q) => statement(q, []))();
    for (let round = 0; round < 2; round += 1) {
      expect(await read(first, one)).toEqual([{ n: 1 }]);
      expect(await read(second, two)).toEqual([{ n: 2 }]);
      expect(await read(first, twoInFirst)).toEqual([{ n: 2 }]);
      // Inside a transaction too, on the transaction's connection.
      expect(await first.inTransaction((q) => one(q, []))).toEqual([{ n: 1 }]);
      expect(await second.inTransaction((q) => two(q, []))).toEqual([{ n: 2 }]);
    }
  });
});
