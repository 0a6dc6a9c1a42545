import fs from 'node:fs';
import net from 'node:net';
import { describe, expect, it } from 'vitest';
import { createTestDatabase, queryRows } from '../helpers/postgres';

/** CI names a server in TEST_DATABASE_URL; a machine without one relies on this path, so it runs here too. */
describe('the embedded PostgreSQL of the tests', () => {
  it('starts a server with a fresh database, and leaves neither server nor folder behind', async () => {
    const database = await createTestDatabase('embedded');
    const { port } = new URL(database.url);
    try {
      expect(database.name).toMatch(/^mcp_test_[0-9a-f]{16}$/);
      expect(fs.existsSync(database.dataDir!)).toBe(true);
      const [row] = await queryRows<{ name: string; tables: string }>(
        database.url,
        "SELECT current_database() AS name, (SELECT count(*) FROM pg_tables WHERE schemaname = 'public') AS tables",
      );
      expect(row).toEqual({ name: database.name, tables: '0' });
    } finally {
      await database.drop();
    }
    expect(fs.existsSync(database.dataDir!)).toBe(false);
    const listening = await new Promise<boolean>((resolve) => {
      const socket = net.connect(Number(port), '127.0.0.1');
      socket.once('connect', () => (socket.destroy(), resolve(true)));
      socket.once('error', () => resolve(false));
    });
    expect(listening).toBe(false);
  });
});
