import { storageTroubleOf, type StorageTrouble, type StorageTroubleKind } from '@/db/errors';
import { storageHealth } from './health';

/** What each kind of storage trouble means for the one who asked, in a few words. */
const words: Record<StorageTroubleKind, string> = {
  unreachable: 'the database cannot be reached right now; the request may not have been carried out',
  busy: 'the database is busy (another process holds its write lock); the change was not made',
  full: 'storage is full, so nothing new can be saved; the change was not made, and reading still works',
  readonly: 'the database is read-only right now; the change was not made, and reading still works',
  gone: 'the database file is gone (moved, or its folder removed); the change was not made',
  io: "the database's disk failed a read or write; the change was not made",
};

/** What each kind of trouble is, as a state: for the dashboard's banner and /healthz. */
const states: Record<StorageTroubleKind, string> = {
  unreachable: 'The database cannot be reached right now.',
  busy: 'The database is busy: another process holds its write lock.',
  full: 'Storage is full: nothing new can be saved, and reading still works.',
  readonly: 'The database is read-only right now: reading still works.',
  gone: 'The database file is gone (moved, or its folder removed).',
  io: "The database's disk is failing reads or writes.",
};

export function storageTroubleState(kind: StorageTroubleKind): string {
  return states[kind];
}

const seconds = (count: number) => `${count} second${count === 1 ? '' : 's'}`;

/** For an MCP client: the error message, which ends with when to retry. */
export function storageTroubleMessage(trouble: StorageTrouble): string {
  return `Service Unavailable: ${words[trouble.kind]}. Retry after ${seconds(trouble.retryAfterSeconds)}`;
}

/** For a person in the dashboard: a sentence, and when to try again. */
export function storageTroubleSentence(trouble: StorageTrouble): string {
  const text = words[trouble.kind];
  return `${text[0].toUpperCase()}${text.slice(1)}. Try again in ${seconds(trouble.retryAfterSeconds)}.`;
}

/**
 * The storage trouble an error is, if any, noted for /healthz and the dashboard's banner: every
 * refusal of a request or an action goes through here.
 */
export function storageTroubleIn(error: unknown): StorageTrouble | undefined {
  const trouble = storageTroubleOf(error);
  if (trouble) storageHealth().noteTrouble(trouble.kind);
  return trouble;
}
