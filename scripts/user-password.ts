/**
 * Sets a user's dashboard password (for users created by token:create):
 *   npm run user:password -- --email ada@example.com [--end-tokens-and-apps] [--remove-notifications]
 * The password is read from the PASSWORD environment variable or, when unset, from standard input.
 * Every browser session ends, and the browsers subscribed in them are no longer told; with
 * --end-tokens-and-apps, personal access tokens and connected apps end too, and with
 * --remove-notifications, webhooks, subscribed browsers, e-mail choices and preferences are removed.
 */
import { parseArgs } from 'node:util';
import { closeStore } from '@/db/client';
import { setPassword } from '@/lib/auth/accounts';

async function readStdin(): Promise<string> {
  if (process.stdin.isTTY) process.stderr.write('New password: ');
  let input = '';
  for await (const chunk of process.stdin) input += chunk;
  return input.replace(/\r?\n$/, '');
}

async function main() {
  const { values } = parseArgs({
    options: {
      email: { type: 'string' },
      'end-tokens-and-apps': { type: 'boolean', default: false },
      'remove-notifications': { type: 'boolean', default: false },
    },
  });
  if (!values.email) {
    console.error('Usage: npm run user:password -- --email <email> [--end-tokens-and-apps] [--remove-notifications]   (password from $PASSWORD or standard input)');
    process.exit(2);
  }
  const password = process.env.PASSWORD ?? (await readStdin());
  const alsoTokensAndApps = values['end-tokens-and-apps'];
  const alsoNotifications = values['remove-notifications'];
  const result = await setPassword(values.email, password, { alsoTokensAndApps, alsoNotifications });
  if (!result.ok) {
    console.error(result.message);
    process.exit(2);
  }
  console.error(`Password set for ${values.email.trim().toLowerCase()}. Every browser signed in before must sign in again.`);
  console.error(
    alsoTokensAndApps
      ? 'Their personal access tokens are revoked and their connected apps disconnected.'
      : 'Their personal access tokens and connected apps still work: add --end-tokens-and-apps to end them too.',
  );
  console.error(
    alsoNotifications
      ? 'Their webhooks, subscribed browsers and e-mail notifications are removed.'
      : 'Their webhooks and e-mail notifications still deliver (browsers subscribed before no longer do): add --remove-notifications to remove them too.',
  );
}

// A PostgreSQL pool would keep the process alive until its idle connections time out.
void main().finally(() => closeStore());
