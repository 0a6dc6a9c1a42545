import NativeAbiBuild from 'better-sqlite3';
import NodeApiBuild from 'better-sqlite3-napi';

/**
 * better-sqlite3's Database class, from the release that runs on this Node; every SQLite connection is
 * opened with it. Both releases are installed and load their native part only when a database is opened.
 *
 * - 12.x (`better-sqlite3`) is compiled against the running Node's own headers. Built against Node
 *   24.19 and later, its objects remove a cleanup hook from their destructor, and Node aborts the
 *   process (`Assertion failed: (env) != nullptr`) when the garbage collector frees a statement outside
 *   JavaScript, as its idle-time collection does a minute or two into `npm start`.
 * - 13.x (`better-sqlite3-napi`) uses Node-API and ships its binaries, but needs Node-API 10: on Node 20
 *   (Node-API 9) and on 22 before 22.14 it crashes at the first `new Database()`.
 *
 * So Node-API 10 (Node 22.14 and later, 24, 26) gets 13.x and everything earlier gets 12.x.
 */
const Database: typeof NativeAbiBuild = Number(process.versions.napi) >= 10 ? NodeApiBuild : NativeAbiBuild;
type Database = NativeAbiBuild.Database;

export default Database;
