CREATE TABLE `oauth_consents` (
	`id` text PRIMARY KEY NOT NULL,
	`user_id` text NOT NULL,
	`client_id` text NOT NULL,
	`client_name` text,
	`registration` text NOT NULL,
	`redirect_host` text,
	`grant_id` text NOT NULL,
	`scope` text NOT NULL,
	`allowed_at` integer NOT NULL,
	`last_used_at` integer,
	FOREIGN KEY (`user_id`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `oauth_consents_user_client_unique` ON `oauth_consents` (`user_id`,`client_id`);--> statement-breakpoint
CREATE INDEX `oauth_consents_grant_idx` ON `oauth_consents` (`grant_id`);--> statement-breakpoint
CREATE TABLE `oauth_records` (
	`model` text NOT NULL,
	`id_hash` text NOT NULL,
	`payload` text NOT NULL,
	`grant_id` text,
	`uid` text,
	`registered_via` text,
	`expires_at` integer,
	`consumed_at` integer
);
--> statement-breakpoint
CREATE UNIQUE INDEX `oauth_records_model_id_unique` ON `oauth_records` (`model`,`id_hash`);--> statement-breakpoint
CREATE INDEX `oauth_records_grant_idx` ON `oauth_records` (`grant_id`);--> statement-breakpoint
CREATE INDEX `oauth_records_uid_idx` ON `oauth_records` (`uid`);--> statement-breakpoint
CREATE INDEX `oauth_records_expires_idx` ON `oauth_records` (`expires_at`);