/**
 * Webhooks from the command line: the operator's, told of every user's tasks, or one person's.
 *   webhook:add -- --url https://example.com/hooks [--event task.input_required ...] [--email ada@example.com]
 *     prints the endpoint's id and its signing secret (whsec_…), once.
 *   webhook:list [-- --email ada@example.com]
 *   webhook:remove -- --id <id> [--email ada@example.com]
 * Without --email the webhook is the operator's: it receives the events of every user's tasks.
 */
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { closeStore } from '@/db/client';
import { deleteNotificationTarget, listNotificationTargets } from '@/db/queries/notifications';
import { getUserByEmail } from '@/db/queries/users';
import { notificationEventTypes, type NotificationEventType } from '@/db/schema';
import { ConfigError, getEnv } from '@/lib/env';
import { addWebhook } from '@/lib/notify/targets';

const usage = `Usage:
  npm run --silent webhook:add -- --url <url> [--event <type>]... [--email <user's email>]
  npm run --silent webhook:list [-- --email <user's email>]
  npm run --silent webhook:remove -- --id <id> [--email <user's email>]
Event types: ${notificationEventTypes.join(', ')} (all when none is given).
Without --email a webhook is the operator's and is told of every user's tasks.`;

function fail(message: string): never {
  console.error(message);
  process.exit(2);
}

/** The person named by --email, or null for the operator. */
async function owner(email: string | undefined): Promise<string | null> {
  if (email === undefined) return null;
  const parsed = z.email().safeParse(email.trim());
  if (!parsed.success) fail(`--email must be an email address.\n${usage}`);
  const user = await getUserByEmail(parsed.data);
  if (!user) fail(`No user has the email ${parsed.data}.`);
  return user.id;
}

async function main(): Promise<void> {
  const [command, ...args] = process.argv.slice(2);
  const { values } = parseArgs({
    args,
    options: { url: { type: 'string' }, event: { type: 'string', multiple: true }, email: { type: 'string' }, id: { type: 'string' } },
  });
  const userId = await owner(values.email);
  if (command === 'add') {
    if (!values.url) fail(`--url is required.\n${usage}`);
    const unknown = (values.event ?? []).filter((type) => !(notificationEventTypes as readonly string[]).includes(type));
    if (unknown.length > 0) fail(`Unknown event type ${unknown.join(', ')}.\n${usage}`);
    const events = (values.event?.length ? values.event : [...notificationEventTypes]) as NotificationEventType[];
    const added = await addWebhook(userId, { url: values.url, events }, getEnv().notifyPrivateHosts);
    if ('error' in added) fail(added.error);
    process.stdout.write(`id: ${added.target.id}\nsecret: ${added.target.secret}\n`);
  } else if (command === 'list') {
    for (const target of await listNotificationTargets(userId)) {
      if (target.channel !== 'webhook') continue;
      process.stdout.write(`${target.id}  ${target.status}  ${target.address}  ${target.events.join(',')}${target.lastError ? `  last error: ${target.lastError}` : ''}\n`);
    }
  } else if (command === 'remove') {
    if (!values.id) fail(`--id is required.\n${usage}`);
    if (!(await deleteNotificationTarget(values.id, userId))) fail(`No ${userId ? "such user's" : "operator's"} webhook has the id ${values.id}.`);
    console.error('Webhook removed.');
  } else {
    fail(usage);
  }
  // A PostgreSQL pool would keep the process alive until its idle connections time out.
  await closeStore();
}

main().catch((error: unknown) => {
  if (error instanceof ConfigError) fail(error.message);
  if (error instanceof TypeError && 'code' in error && String(error.code).startsWith('ERR_PARSE_ARGS')) fail(`${error.message}\n${usage}`);
  throw error;
});
