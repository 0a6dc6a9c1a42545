-- The counters of the rate limits and sign-in throttles that every instance shares (db/limiter.ts). The
-- columns are those rate-limiter-flexible's RateLimiterPostgres reads and writes (the key as text: a key holds an
-- email and an address, longer than the library's own varchar(255)); it deletes expired rows.
CREATE TABLE IF NOT EXISTS "rate_limits" (
  "key" text PRIMARY KEY,
  "points" integer NOT NULL DEFAULT 0,
  "expire" bigint
);
