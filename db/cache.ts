import { getDb } from './client';

/**
 * Bounded caches of rows that every request reads (a token's owner, a session), kept process-wide on
 * globalThis so that separately bundled code shares them.
 *
 * Staleness: the query functions that write these rows update or drop their entries at once, so this
 * process never serves what it has itself changed. A write by another connection (the token CLI, a
 * second process on the same SQLite file) changes SQLite's `data_version`, which empties every cache
 * before the next read (the counter is read at most once per clock millisecond: a write committed in
 * the millisecond of the last check is seen by the first read of the next one). When several instances share a database server instead (where no such
 * counter exists), an entry may be at most `maxAgeMs` old: a revocation made elsewhere takes effect
 * within that time.
 */
export class RowCache<K, V> {
  private readonly entries = new Map<K, { value: V; storedAt: number }>();

  constructor(
    private readonly maxEntries: number,
    private readonly maxAgeMs: number,
  ) {}

  /** The cached row, or what `load` reads (undefined is not cached: a missing row may appear). */
  get(key: K, load: () => V | undefined): V | undefined {
    dropCachesIfDatabaseChanged();
    const now = Date.now();
    const hit = this.entries.get(key);
    if (hit && now - hit.storedAt < this.maxAgeMs) {
      // Re-inserting keeps the Map in least-recently-used order.
      this.entries.delete(key);
      this.entries.set(key, hit);
      return hit.value;
    }
    const value = load();
    if (value === undefined) {
      this.entries.delete(key);
      return undefined;
    }
    this.entries.set(key, { value, storedAt: now });
    if (this.entries.size > this.maxEntries) this.entries.delete(this.entries.keys().next().value as K);
    return value;
  }

  /** Changes a cached row in place after this process wrote the same change to the database. */
  update(key: K, change: (value: V) => V): void {
    const hit = this.entries.get(key);
    if (hit) hit.value = change(hit.value);
  }

  delete(key: K): void {
    this.entries.delete(key);
  }

  clear(): void {
    this.entries.clear();
  }
}

interface CacheRegistry {
  caches: Map<string, RowCache<unknown, unknown>>;
  dataVersion?: number;
  /** When data_version was last read (Date.now()). */
  checkedAt?: number;
  connection?: unknown;
  readDataVersion?: () => number;
}
const globalForCaches = globalThis as unknown as { __mcpTaskServerRowCaches?: CacheRegistry };
const registry: CacheRegistry = (globalForCaches.__mcpTaskServerRowCaches ??= { caches: new Map() });

/** The process's one cache of that name. */
export function rowCache<K, V>(name: string, maxEntries: number, maxAgeMs: number): RowCache<K, V> {
  let cache = registry.caches.get(name);
  if (!cache) {
    cache = new RowCache<unknown, unknown>(maxEntries, maxAgeMs);
    registry.caches.set(name, cache);
  }
  return cache as RowCache<K, V>;
}

function dropCachesIfDatabaseChanged(): void {
  const now = Date.now();
  const sqlite = getDb().$client;
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
