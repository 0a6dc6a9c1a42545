CREATE TABLE `task_inputs` (
	`id` text PRIMARY KEY NOT NULL,
	`task_id` text NOT NULL,
	`user_id` text NOT NULL,
	`key` text NOT NULL,
	`kind` text NOT NULL,
	`request` text NOT NULL,
	`status` text NOT NULL,
	`response` text,
	`answered_by` text,
	`answered_by_label` text,
	`answered_via` text,
	`client_task_id` text,
	`created_at` integer NOT NULL,
	`answered_at` integer,
	FOREIGN KEY (`task_id`) REFERENCES `tasks`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `task_inputs_task_key_unique` ON `task_inputs` (`task_id`,`key`);--> statement-breakpoint
CREATE INDEX `task_inputs_user_status_idx` ON `task_inputs` (`user_id`,`status`,`created_at`);