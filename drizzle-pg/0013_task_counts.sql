-- Each person's stored tasks, counted as tasks are inserted and deleted (by any instance, the CLI, a
-- copy or by hand), so that a creation reads one row instead of counting up to the limit's worth of
-- tasks. Statement triggers: a sweep deleting thousands of tasks updates each person's row once, in
-- the order of their ids, so two sweeps at once cannot deadlock on them.
CREATE TABLE IF NOT EXISTS "task_counts" (
  "user_id" text PRIMARY KEY REFERENCES "users"("id") ON DELETE CASCADE,
  "stored" integer NOT NULL
);
--> statement-breakpoint
CREATE FUNCTION mcp_count_inserted_tasks() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO task_counts AS c (user_id, stored)
    SELECT user_id, count(*) FROM inserted GROUP BY user_id ORDER BY user_id
  ON CONFLICT (user_id) DO UPDATE SET stored = c.stored + excluded.stored;
  RETURN NULL;
END;
$$;
--> statement-breakpoint
CREATE FUNCTION mcp_count_deleted_tasks() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE task_counts AS c SET stored = c.stored - d.n
    FROM (SELECT user_id, count(*) AS n FROM deleted GROUP BY user_id ORDER BY user_id) AS d
    WHERE c.user_id = d.user_id;
  RETURN NULL;
END;
$$;
--> statement-breakpoint
CREATE TRIGGER tasks_counted_on_insert AFTER INSERT ON tasks REFERENCING NEW TABLE AS inserted FOR EACH STATEMENT EXECUTE FUNCTION mcp_count_inserted_tasks();
--> statement-breakpoint
CREATE TRIGGER tasks_counted_on_delete AFTER DELETE ON tasks REFERENCING OLD TABLE AS deleted FOR EACH STATEMENT EXECUTE FUNCTION mcp_count_deleted_tasks();
--> statement-breakpoint
-- The migration runs under the instances' migration lock, before any of them serves: no insert races it.
INSERT INTO task_counts (user_id, stored) SELECT user_id, count(*) FROM tasks GROUP BY user_id;
--> statement-breakpoint
-- A task's creation in one statement: the per-person lock, both limits and the inserts of the task and
-- its first event, so the lock is held for this statement and its commit rather than several round
-- trips. In READ COMMITTED each statement below sees what was committed before it ran: the counts are
-- read after the lock is taken, so two creations cannot both take the last place. Returns
-- {"task": row} or {"refused": "active" | "stored", "count": n}.
CREATE FUNCTION mcp_create_task(task jsonb, max_active integer, max_stored integer, actor text) RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
  new_task tasks := jsonb_populate_record(NULL::tasks, task);
  active integer;
  stored integer;
BEGIN
  PERFORM pg_advisory_xact_lock(hashtextextended('task-limits:' || new_task.user_id, 0));
  SELECT count(*) INTO active FROM (SELECT 1 FROM tasks WHERE user_id = new_task.user_id AND status IN ('working', 'input_required') LIMIT max_active) AS a;
  IF active >= max_active THEN
    RETURN jsonb_build_object('refused', 'active', 'count', active);
  END IF;
  SELECT coalesce((SELECT c.stored FROM task_counts AS c WHERE c.user_id = new_task.user_id), 0) INTO stored;
  IF stored >= max_stored THEN
    RETURN jsonb_build_object('refused', 'stored', 'count', stored);
  END IF;
  INSERT INTO tasks SELECT (new_task).*;
  INSERT INTO task_events (task_id, at, from_status, to_status, status_message, actor)
    VALUES (new_task.id, new_task.created_at, NULL, new_task.status, new_task.status_message, actor);
  RETURN jsonb_build_object('task', to_jsonb(new_task));
END;
$$;
