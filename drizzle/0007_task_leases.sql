ALTER TABLE `tasks` ADD `runner` text;--> statement-breakpoint
ALTER TABLE `tasks` ADD `lease_expires_at` integer;