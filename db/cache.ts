import { getStore, type Store } from './client';
import { subscribeNotifications } from './notify';

/**
 * Bounded caches of rows that every request reads (a token's owner, a session), kept process-wide on
 * globalThis so that separately bundled code shares them.
 *
 * Staleness: the query functions that write these rows update or drop their entries at once, so this
 * process never serves what it has itself changed. Other writers:
 * - SQLite: a write by another connection (the token CLI, a second process on the same file) changes
 *   SQLite's `data_version`, which empties every cache before the next read (the counter is read at
 *   most once per clock millisecond: a write committed in the millisecond of the last check is seen by
 *   the first read of the next one).
 * - PostgreSQL: a trigger on each cached table announces every changed or deleted row at commit, by
 *   its id (drizzle-pg's row_change_notifications and notifications_carry_ids migrations); each
 *   instance drops that entry when the notification arrives, milliseconds later, and a read still on its way then is not kept (`stamp`).
 *   While the listening connection is down, an entry may be at most `maxAgeMs` old; every cache is
 *   emptied when it comes back.
 */
export class RowCache<K, V> {
  private readonly entries = new Map<K, { value: V; storedAt: number; insertedAs: number }>();
  /** Entries inserted so far: an entry's `insertedAs` tells how many came after it, so how near eviction it is. */
  private insertions = 0;
  /** The entry of each row, by the row's own key, for a cache keyed otherwise (`rowKeyOf`). */
  private readonly keysByRow = new Map<string, K>();
  /** How many times entries were dropped: a read that began before a drop may hold what it dropped. */
  private drops = 0;

  constructor(
    private readonly maxEntries: number,
    private readonly maxAgeMs: number,
    /** The key by which a row's change is announced, when it is not the cache's key. */
    private readonly rowKeyOf?: (value: V) => string,
  ) {}

  /** The cached row while it is fresh enough; undefined sends the caller to the database. */
  peek(key: K): V | undefined {
    dropCachesIfDatabaseChanged();
    const hit = this.entries.get(key);
    if (!hit) return undefined;
    if (Date.now() - hit.storedAt >= this.maxAgeMs) {
      this.remove(key);
      return undefined;
    }
    // Re-inserting keeps the Map in least-recently-used order. An entry still among the newest half is
    // left where it is: moving it on every read replaced the Map's table every few reads, and a table held
    // by a long-lived Map outlives young collections. So a row read is kept for at least half of
    // `maxEntries` insertions after that read, rather than all of them.
    if (this.insertions - hit.insertedAs > this.maxEntries / 2) {
      this.entries.delete(key);
      hit.insertedAs = ++this.insertions;
      this.entries.set(key, hit);
    }
    return hit.value;
  }

  /**
   * Taken before reading a row that `set` will keep. An invalidation can arrive while the read is on its
   * way (another instance changed the row just after the read's snapshot): the stamp tells `set` that
   * the row read may be the one that invalidation was about.
   */
  stamp(): number {
    return this.drops;
  }

  /**
   * Keeps a row read since `stamp` was taken, unless entries were dropped meanwhile (the next read goes
   * to the database again). Undefined is not kept: a missing row may appear.
   */
  set(key: K, value: V | undefined, stamp: number): void {
    this.remove(key);
    if (value === undefined || stamp !== this.drops) return;
    this.entries.set(key, { value, storedAt: Date.now(), insertedAs: ++this.insertions });
    if (this.rowKeyOf) this.keysByRow.set(this.rowKeyOf(value), key);
    if (this.entries.size > this.maxEntries) this.remove(this.entries.keys().next().value as K);
  }

  /** Changes a cached row in place after this process wrote the same change to the database. */
  update(key: K, change: (value: V) => V): void {
    const hit = this.entries.get(key);
    if (hit) hit.value = change(hit.value);
  }

  delete(key: K): void {
    this.drops += 1;
    this.remove(key);
  }

  /** Drops the entry of the row whose own key this is (see `rowKeyOf`). */
  deleteRow(rowKey: string): void {
    this.drops += 1;
    const key = this.keysByRow.get(rowKey);
    if (key !== undefined) this.remove(key);
  }

  clear(): void {
    this.drops += 1;
    this.entries.clear();
    this.keysByRow.clear();
  }

  private remove(key: K): void {
    const hit = this.entries.get(key);
    if (!hit) return;
    this.entries.delete(key);
    if (this.rowKeyOf) this.keysByRow.delete(this.rowKeyOf(hit.value));
  }
}

/**
 * Which row changes drop entries: a changed row's key names the entry (`key`: the cache's key; `row`:
 * the key `rowKeyOf` reads off a cached row), or any change empties the cache (`all`).
 */
export type InvalidatedBy = Record<string, 'key' | 'row' | 'all'>;

interface CacheRegistry {
  caches: Map<string, RowCache<unknown, unknown>>;
  invalidatedBy: Map<string, InvalidatedBy>;
  /** The PostgreSQL store whose row changes this process follows. */
  following?: Store;
  dataVersion?: number;
  /** When data_version was last read (Date.now()). */
  checkedAt?: number;
  connection?: unknown;
  readDataVersion?: () => number;
}
const globalForCaches = globalThis as unknown as { __mcpTaskServerRowCaches?: CacheRegistry };
const registry: CacheRegistry = (globalForCaches.__mcpTaskServerRowCaches ??= { caches: new Map(), invalidatedBy: new Map() });

/**
 * The process's one cache of that name. `invalidatedBy` names the tables (as PostgreSQL's triggers name
 * them) whose row changes drop its entries.
 */
export function rowCache<K, V>(name: string, maxEntries: number, maxAgeMs: number, invalidatedBy: InvalidatedBy = {}, rowKeyOf?: (value: V) => string): RowCache<K, V> {
  let cache = registry.caches.get(name);
  if (!cache) {
    cache = new RowCache<unknown, unknown>(maxEntries, maxAgeMs, rowKeyOf as ((value: unknown) => string) | undefined);
    registry.caches.set(name, cache);
    registry.invalidatedBy.set(name, invalidatedBy);
  }
  return cache as RowCache<K, V>;
}

function followRowChanges(store: Extract<Store, { dialect: 'pg' }>): void {
  registry.following = store;
  const clearAll = () => {
    for (const cache of registry.caches.values()) cache.clear();
  };
  clearAll();
  subscribeNotifications(store, {
    onPayload: (payload) => {
      // Anyone who may connect can send one: the worst it does is drop entries, which are read again.
      if (payload.k !== 'row' || typeof payload.table !== 'string' || typeof payload.key !== 'string') return;
      for (const [name, tables] of registry.invalidatedBy) {
        const how = tables[payload.table];
        if (how === 'all') registry.caches.get(name)?.clear();
        else if (how === 'key') registry.caches.get(name)?.delete(payload.key);
        else if (how === 'row') registry.caches.get(name)?.deleteRow(payload.key);
      }
    },
    onReconnect: clearAll,
  });
}

function dropCachesIfDatabaseChanged(): void {
  const store = getStore();
  if (store.dialect === 'pg') {
    if (registry.following !== store) followRowChanges(store);
    return;
  }
  const now = Date.now();
  const sqlite = store.sqlite;
  if (registry.checkedAt === now && registry.connection === sqlite) return;
  registry.checkedAt = now;
  if (registry.connection !== sqlite || !registry.readDataVersion) {
    // A new connection: nothing cached can be trusted.
    const statement = sqlite.prepare('PRAGMA data_version').pluck();
    registry.readDataVersion = () => statement.get() as number;
    registry.connection = sqlite;
    registry.dataVersion = undefined;
  }
  const version = registry.readDataVersion();
  if (version !== registry.dataVersion) {
    for (const cache of registry.caches.values()) cache.clear();
    registry.dataVersion = version;
  }
}
