/**
 * OAuth clients from the command line, for connectors that ask for a client id and secret.
 *   oauth:client -- --name "My connector" --redirect-uri https://example.com/callback [--redirect-uri …] [--public]
 *     prints the client id and (unless --public) its secret, once.
 *   oauth:client -- --delete <client id>
 */
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { closeStore } from '@/db/client';
import { deleteClient, preregisterClient } from '@/lib/auth/oauth/clients';
import { readServerSecretForScript } from '@/lib/auth/secret';

const usage = `Usage:
  npm run --silent oauth:client -- --name <name> --redirect-uri <url> [--redirect-uri <url>...] [--public]
  npm run --silent oauth:client -- --delete <client id>
  (an id given out before ids began with letters may begin with "-": pass it as --delete=<client id>)`;

function fail(message: string): never {
  console.error(message);
  process.exit(2);
}

async function main(): Promise<void> {
  let values;
  try {
    ({ values } = parseArgs({
      options: {
        name: { type: 'string' },
        'redirect-uri': { type: 'string', multiple: true },
        public: { type: 'boolean', default: false },
        delete: { type: 'string' },
      },
    }));
  } catch (error) {
    fail(`${(error as Error).message}\n${usage}`);
  }
  // The provider seals its records with a key derived from the servers' signing secret.
  await readServerSecretForScript();
  if (values.delete) {
    await deleteClient(values.delete);
    return;
  }
  const name = z.string().trim().min(1).max(200).safeParse(values.name);
  if (!name.success) fail(`--name is required (at most 200 characters).\n${usage}`);
  const redirectUris = z.array(z.url({ protocol: /^https?$/ })).min(1).max(10).safeParse(values['redirect-uri'] ?? []);
  if (!redirectUris.success) fail(`--redirect-uri must be given once or more, each an http(s) URL.\n${usage}`);
  try {
    const { clientId, clientSecret } = await preregisterClient({ name: name.data, redirectUris: redirectUris.data, confidential: !values.public });
    process.stdout.write(`client_id: ${clientId}\n${clientSecret ? `client_secret: ${clientSecret}\n` : ''}`);
  } catch (error) {
    fail(`The client was not registered: ${(error as { error_description?: string }).error_description ?? (error as Error).message}`);
  }
}

// A PostgreSQL pool would keep the process alive until its idle connections time out.
void main().finally(() => closeStore());
