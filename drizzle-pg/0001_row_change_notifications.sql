-- Every instance caches token and session rows (db/cache.ts). A change to one of those rows, made by
-- any instance, the CLI or by hand, tells every instance which entry to drop, on the channel the
-- instances listen on (db/notify.ts). NOTIFY is sent at commit, and not at all on rollback.
CREATE FUNCTION mcp_notify_row_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('mcp_task_server', json_build_object('k', 'row', 'table', TG_TABLE_NAME, 'key', to_jsonb(OLD) ->> TG_ARGV[0])::text);
  RETURN NULL;
END;
$$;
--> statement-breakpoint
CREATE TRIGGER access_tokens_changed AFTER UPDATE OR DELETE ON access_tokens FOR EACH ROW EXECUTE FUNCTION mcp_notify_row_change('token_hash');
--> statement-breakpoint
CREATE TRIGGER users_changed AFTER UPDATE OR DELETE ON users FOR EACH ROW EXECUTE FUNCTION mcp_notify_row_change('id');
--> statement-breakpoint
CREATE TRIGGER mcp_sessions_changed AFTER UPDATE OR DELETE ON mcp_sessions FOR EACH ROW EXECUTE FUNCTION mcp_notify_row_change('id');
