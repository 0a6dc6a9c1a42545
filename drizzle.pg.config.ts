import { defineConfig } from 'drizzle-kit';

/** The PostgreSQL migrations (npm run db:generate:pg), applied by the server at start when DATABASE_URL is set. */
export default defineConfig({
  dialect: 'postgresql',
  schema: './db/schema.pg.ts',
  out: './drizzle-pg',
});
