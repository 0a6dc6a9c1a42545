-- The instances running on this database, one row each (db/queries/instances.ts): an instance renews its row
-- while it lives and deletes it when it stops; the row of one that died stops counting at expires_at
-- (milliseconds since the epoch). secret_fingerprint is HMAC-SHA256 of a fixed label keyed with the instance's
-- signing secret: instances compare secrets with it without storing one given in AUTH_SECRET.
CREATE TABLE IF NOT EXISTS "instances" (
  "id" text PRIMARY KEY,
  "secret_fingerprint" text NOT NULL,
  "started_at" bigint NOT NULL,
  "expires_at" bigint NOT NULL
);--> statement-breakpoint
-- The signing secret instances started without AUTH_SECRET share: one row, made by the first of them.
CREATE TABLE IF NOT EXISTS "generated_secret" (
  "id" integer PRIMARY KEY DEFAULT 1 CHECK ("id" = 1),
  "secret" text NOT NULL,
  "created_at" bigint NOT NULL
);
