-- Any role that may connect to the database can listen on the instances' channel: its notifications
-- name rows by id and carry no data. A changed token is announced by its id, not its hash.
DROP TRIGGER access_tokens_changed ON access_tokens;
--> statement-breakpoint
CREATE TRIGGER access_tokens_changed AFTER UPDATE OR DELETE ON access_tokens FOR EACH ROW EXECUTE FUNCTION mcp_notify_row_change('id');
--> statement-breakpoint
-- What a notification between instances points to when no other row holds it: a tool's log message,
-- its request to close a stream (lib/tasks/shared-bus.ts). Read within milliseconds; every instance
-- deletes those older than a minute.
CREATE TABLE IF NOT EXISTS "relayed_messages" (
  "id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY,
  "task_id" text NOT NULL,
  "message" text NOT NULL,
  "created_at" bigint NOT NULL
);
--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "relayed_messages_created_at_idx" ON "relayed_messages" ("created_at");
