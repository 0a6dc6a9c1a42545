/**
 * Sets a user's dashboard password (for users created by token:create):
 *   npm run user:password -- --email ada@example.com
 * The password is read from the PASSWORD environment variable or, when unset, from standard input.
 */
import { parseArgs } from 'node:util';
import { setPassword } from '@/lib/auth/accounts';

async function readStdin(): Promise<string> {
  if (process.stdin.isTTY) process.stderr.write('New password: ');
  let input = '';
  for await (const chunk of process.stdin) input += chunk;
  return input.replace(/\r?\n$/, '');
}

async function main() {
  const { values } = parseArgs({ options: { email: { type: 'string' } } });
  if (!values.email) {
    console.error('Usage: npm run user:password -- --email <email>   (password from $PASSWORD or standard input)');
    process.exit(2);
  }
  const password = process.env.PASSWORD ?? (await readStdin());
  const result = await setPassword(values.email, password);
  if (!result.ok) {
    console.error(result.message);
    process.exit(2);
  }
  console.error(`Password set for ${values.email.trim().toLowerCase()}.`);
}

void main();
