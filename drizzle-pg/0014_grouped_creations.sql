-- Several creations of one person's in one statement: the person's lock taken once, both limits read
-- once and applied to each creation in turn (as if they had come one after another), the tasks and
-- their first events inserted together, and one commit. Creations of one person asked for while one of
-- theirs is being committed wait for it and then go together, so that they share a commit rather than
-- each waiting for the lock through the one before it. `entries` is an array of {"task": row, "actor":
-- text, "max_active": n, "max_stored": n}; the answer is an array in the same order, each {"task": row}
-- or {"refused": "active" | "stored", "count": n}. Every entry is the same person's.
-- Its statements are planned for each call (plan_cache_mode): a plan kept from the person's first
-- calls, made while the tasks table was small, would count their active tasks by reading the whole
-- table. mcp_create_task stays for instances not yet upgraded.
CREATE FUNCTION mcp_create_tasks(entries jsonb) RETURNS jsonb LANGUAGE plpgsql SET plan_cache_mode = force_custom_plan AS $$
DECLARE
  owner text := entries -> 0 -> 'task' ->> 'user_id';
  entry jsonb;
  new_task tasks;
  active integer;
  stored integer;
  taken jsonb := '[]'::jsonb;
  answers jsonb := '[]'::jsonb;
BEGIN
  PERFORM pg_advisory_xact_lock(hashtextextended('task-limits:' || owner, 0));
  SELECT count(*) INTO active FROM (
    SELECT 1 FROM tasks WHERE user_id = owner AND status IN ('working', 'input_required')
    LIMIT (SELECT max(cast(e ->> 'max_active' AS integer)) FROM jsonb_array_elements(entries) AS e)
  ) AS a;
  SELECT coalesce((SELECT c.stored FROM task_counts AS c WHERE c.user_id = owner), 0) INTO stored;
  FOR entry IN SELECT e FROM jsonb_array_elements(entries) WITH ORDINALITY AS x (e, n) ORDER BY n LOOP
    new_task := jsonb_populate_record(NULL::tasks, entry -> 'task');
    IF new_task.user_id IS DISTINCT FROM owner THEN
      RAISE EXCEPTION 'mcp_create_tasks: every entry must be the same person''s';
    END IF;
    IF active >= cast(entry ->> 'max_active' AS integer) THEN
      answers := answers || jsonb_build_array(jsonb_build_object('refused', 'active', 'count', active));
    ELSIF stored >= cast(entry ->> 'max_stored' AS integer) THEN
      answers := answers || jsonb_build_array(jsonb_build_object('refused', 'stored', 'count', stored));
    ELSE
      IF new_task.status IN ('working', 'input_required') THEN
        active := active + 1;
      END IF;
      stored := stored + 1;
      taken := taken || jsonb_build_array(jsonb_build_object('task', to_jsonb(new_task), 'actor', entry -> 'actor'));
      answers := answers || jsonb_build_array(jsonb_build_object('task', to_jsonb(new_task)));
    END IF;
  END LOOP;
  -- One insert each: the statement triggers that keep task_counts run once for the whole group.
  INSERT INTO tasks SELECT r.* FROM jsonb_array_elements(taken) WITH ORDINALITY AS x (t, n), jsonb_populate_record(NULL::tasks, t -> 'task') AS r ORDER BY n;
  INSERT INTO task_events (task_id, at, from_status, to_status, status_message, actor)
    SELECT r.id, r.created_at, NULL, r.status, r.status_message, t ->> 'actor'
    FROM jsonb_array_elements(taken) WITH ORDINALITY AS x (t, n), jsonb_populate_record(NULL::tasks, t -> 'task') AS r
    ORDER BY n;
  RETURN answers;
END;
$$;
