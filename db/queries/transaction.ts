import { getDb } from '../client';

/** Runs several queries as one transaction (nested calls become savepoints). */
export function inTransaction<T>(work: () => T): T {
  return getDb().transaction(() => work());
}
