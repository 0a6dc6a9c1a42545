CREATE TABLE `notification_attempts` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`target_id` text NOT NULL,
	`message_id` text NOT NULL,
	`event_type` text NOT NULL,
	`events` integer DEFAULT 1 NOT NULL,
	`attempt` integer NOT NULL,
	`at` integer NOT NULL,
	`outcome` text NOT NULL,
	`status_code` integer,
	`response` text,
	`error` text,
	`duration_ms` integer NOT NULL,
	FOREIGN KEY (`target_id`) REFERENCES `notification_targets`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `notification_attempts_target_idx` ON `notification_attempts` (`target_id`,`id`);--> statement-breakpoint
CREATE TABLE `notification_events` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`user_id` text NOT NULL,
	`task_id` text NOT NULL,
	`type` text NOT NULL,
	`payload` text NOT NULL,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `notification_events_user_idx` ON `notification_events` (`user_id`,`id`);--> statement-breakpoint
CREATE INDEX `notification_events_created_idx` ON `notification_events` (`created_at`);--> statement-breakpoint
CREATE TABLE `notification_targets` (
	`id` text PRIMARY KEY NOT NULL,
	`user_id` text,
	`channel` text NOT NULL,
	`address` text NOT NULL,
	`secret` text,
	`events` text NOT NULL,
	`options` text NOT NULL,
	`status` text NOT NULL,
	`cursor` integer NOT NULL,
	`attempts` integer DEFAULT 0 NOT NULL,
	`failing_since` integer,
	`last_error` text,
	`next_attempt_at` integer DEFAULT 0 NOT NULL,
	`lease_holder` text,
	`lease_until` integer,
	`window_start` integer DEFAULT 0 NOT NULL,
	`sent_in_window` integer DEFAULT 0 NOT NULL,
	`created_at` integer NOT NULL,
	FOREIGN KEY (`user_id`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `notification_targets_user_idx` ON `notification_targets` (`user_id`);--> statement-breakpoint
CREATE INDEX `notification_targets_due_idx` ON `notification_targets` (`status`,`next_attempt_at`);