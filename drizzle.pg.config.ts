import { defineConfig } from 'drizzle-kit';

/** The PostgreSQL migrations (npm run db:generate:pg); the server itself still migrates SQLite only. */
export default defineConfig({
  dialect: 'postgresql',
  schema: './db/schema.pg.ts',
  out: './drizzle-pg',
});
