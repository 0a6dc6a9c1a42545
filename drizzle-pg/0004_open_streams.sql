-- The streams open on every instance (/mcp GET streams and streamed responses, the dashboard's live views), one
-- row each, so that the per-user stream caps hold for the deployment and a session with a stream open on any
-- instance counts as in use (db/queries/stream-places.ts). An instance renews its rows while it lives; the rows
-- of one that died stop counting at expires_at (milliseconds since the epoch) and the sweep deletes them.
CREATE TABLE IF NOT EXISTS "open_streams" (
  "id" text PRIMARY KEY,
  "user_id" text NOT NULL,
  "kind" text NOT NULL,
  "session_id" text,
  "instance_id" text NOT NULL,
  "expires_at" bigint NOT NULL
);--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "open_streams_user_kind_idx" ON "open_streams" ("user_id", "kind");--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "open_streams_instance_idx" ON "open_streams" ("instance_id");
