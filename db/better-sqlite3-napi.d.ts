/** The Node-API release of better-sqlite3 (see db/sqlite.ts) keeps 12.x's API, so it shares its types. */
declare module 'better-sqlite3-napi' {
  import Database from 'better-sqlite3';
  export = Database;
}
