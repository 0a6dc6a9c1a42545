CREATE TABLE `upstream_credentials` (
	`user_id` text NOT NULL,
	`server_name` text NOT NULL,
	`sealed` text NOT NULL,
	`created_at` integer NOT NULL,
	FOREIGN KEY (`user_id`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `upstream_credentials_user_server_unique` ON `upstream_credentials` (`user_id`,`server_name`);--> statement-breakpoint
ALTER TABLE `tasks` ADD `upstream_task_id` text;--> statement-breakpoint
ALTER TABLE `tasks` ADD `upstream_session_id` text;