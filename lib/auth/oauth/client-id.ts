import { randomBytes } from 'node:crypto';

/**
 * A new client's id: 128 random bits. It starts with letters, never with the "-" that base64url may
 * begin with, so that an operator can pass it to a command line (`oauth:client -- --delete <id>`)
 * without it being read as an option.
 */
export function newClientId(): string {
  return `client_${randomBytes(16).toString('base64url')}`;
}
