CREATE TABLE `linked_accounts` (
	`provider` text NOT NULL,
	`provider_account_id` text NOT NULL,
	`user_id` text NOT NULL,
	`created_at` integer NOT NULL,
	FOREIGN KEY (`user_id`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `linked_accounts_provider_account_unique` ON `linked_accounts` (`provider`,`provider_account_id`);--> statement-breakpoint
CREATE INDEX `linked_accounts_user_idx` ON `linked_accounts` (`user_id`);--> statement-breakpoint
ALTER TABLE `users` ADD `session_generation` integer DEFAULT 0 NOT NULL;