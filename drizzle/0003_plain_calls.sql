ALTER TABLE `session_messages` ADD `stream` text;--> statement-breakpoint
CREATE INDEX `session_messages_stream_idx` ON `session_messages` (`stream`,`id`);--> statement-breakpoint
ALTER TABLE `tasks` ADD `invocation` text DEFAULT 'task' NOT NULL;--> statement-breakpoint
ALTER TABLE `tasks` ADD `call_request_id` text;--> statement-breakpoint
CREATE INDEX `tasks_session_call_idx` ON `tasks` (`session_id`,`call_request_id`);