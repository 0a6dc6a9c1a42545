CREATE TABLE "upstream_credentials" (
	"user_id" text NOT NULL,
	"server_name" text NOT NULL,
	"sealed" text NOT NULL,
	"created_at" bigint NOT NULL
);
--> statement-breakpoint
ALTER TABLE "tasks" ADD COLUMN "upstream_task_id" text;--> statement-breakpoint
ALTER TABLE "tasks" ADD COLUMN "upstream_session_id" text;--> statement-breakpoint
ALTER TABLE "upstream_credentials" ADD CONSTRAINT "upstream_credentials_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "upstream_credentials_user_server_unique" ON "upstream_credentials" USING btree ("user_id","server_name");