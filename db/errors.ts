/**
 * What kind of storage trouble an error is, if any: the database cannot be reached (PostgreSQL down,
 * restarting or out of connections), is busy (another process holds SQLite's write lock past the
 * deadline, or a PostgreSQL lock could not be had), is full, is read-only, or its file is gone. Each
 * is answered 503 with Retry-After and words that say which: retrying later is the whole remedy, and
 * what the client or person should know is why. Anything else is a fault in the request or the code.
 */
export type StorageTroubleKind = 'unreachable' | 'busy' | 'full' | 'readonly' | 'gone' | 'io';

export interface StorageTrouble {
  kind: StorageTroubleKind;
  /** How long a client is asked to wait before trying again. */
  retryAfterSeconds: number;
}

const retryAfterSeconds: Record<StorageTroubleKind, number> = { unreachable: 5, busy: 2, full: 30, readonly: 30, gone: 30, io: 10 };

const unreachableCodes = new Set([
  // Node's socket errors.
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
  // PostgreSQL: connection exceptions (class 08), the server shutting down or starting (57P01-57P03),
  // too many connections (53300).
  '08000',
  '08001',
  '08003',
  '08004',
  '08006',
  '57P01',
  '57P02',
  '57P03',
  '53300',
]);

/** PostgreSQL's codes for the other kinds. */
const postgresCodes: Record<string, StorageTroubleKind> = {
  '53100': 'full', // disk_full
  '25006': 'readonly', // read_only_sql_transaction (default_transaction_read_only, a standby)
  '55P03': 'busy', // lock_not_available
  '40P01': 'busy', // deadlock_detected: the transaction was rolled back
};

/** node-postgres says so in words when a connection ends or cannot be had in time. */
const unreachableMessages = /Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error|Connection closed/i;

/** better-sqlite3's codes are SQLite's extended result codes by name (SQLITE_BUSY_SNAPSHOT, SQLITE_READONLY_DBMOVED...). */
function sqliteKind(code: string): StorageTroubleKind | undefined {
  if (code.startsWith('SQLITE_BUSY') || code.startsWith('SQLITE_LOCKED')) return 'busy';
  if (code === 'SQLITE_FULL') return 'full';
  // The file was deleted or renamed under the open connection, or its folder can no longer be written.
  if (code === 'SQLITE_READONLY_DBMOVED' || code === 'SQLITE_READONLY_DIRECTORY' || code.startsWith('SQLITE_CANTOPEN')) return 'gone';
  if (code.startsWith('SQLITE_READONLY')) return 'readonly';
  if (code.startsWith('SQLITE_IOERR')) return 'io';
  return undefined;
}

function kindOf(error: unknown): StorageTroubleKind | undefined {
  for (let current = error, depth = 0; current instanceof Error && depth < 5; current = current.cause, depth += 1) {
    const code = (current as { code?: unknown }).code;
    // By name: route bundles may each have their own copy of this module.
    if (current.name === 'StorageUnreadable') return (current as StorageUnreadable).kind;
    if (current.name === 'DatabaseFileGone') return 'gone';
    if (typeof code === 'string') {
      if (unreachableCodes.has(code)) return 'unreachable';
      if (code === 'ENOSPC') return 'full';
      if (code === 'EROFS') return 'readonly';
      const kind = code.startsWith('SQLITE_') ? sqliteKind(code) : postgresCodes[code];
      if (kind) return kind;
    }
    if (unreachableMessages.test(current.message)) return 'unreachable';
    // AggregateError (a connect that tried several addresses).
    if (current instanceof AggregateError) {
      const inner = current.errors.map(kindOf).find((found) => found !== undefined);
      if (inner) return inner;
    }
  }
  return undefined;
}

export function storageTroubleOf(error: unknown): StorageTrouble | undefined {
  const kind = kindOf(error);
  return kind ? { kind, retryAfterSeconds: retryAfterSeconds[kind] } : undefined;
}

/** Storage trouble met where the original error is gone (NextAuth's session callback): its kind, carried along. */
export class StorageUnreadable extends Error {
  override name = 'StorageUnreadable';
  constructor(readonly kind: StorageTroubleKind) {
    super(`Storage trouble (${kind}) while reading the session`);
  }
}

/**
 * A write refused because the SQLite file was deleted or moved and could not be put back: in WAL mode
 * SQLite itself would take the write into the file it still has open, where it is lost when the
 * process ends.
 */
export class DatabaseFileGone extends Error {
  override name = 'DatabaseFileGone';
}

/** SQLite's write lock is held by another connection: worth waiting for, briefly. */
export function isSqliteBusy(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && code.startsWith('SQLITE_') && sqliteKind(code) === 'busy';
}
