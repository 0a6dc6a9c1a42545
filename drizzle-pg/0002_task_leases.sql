ALTER TABLE "tasks" ADD COLUMN "runner" text;--> statement-breakpoint
ALTER TABLE "tasks" ADD COLUMN "lease_expires_at" bigint;