import type { IncomingMessage } from 'node:http';
import { getServerSession } from 'next-auth';
import { getUserById } from '@/db/queries/users';
import { getAuthOptions } from '@/lib/auth/options';

function parseCookies(header: string | undefined): Record<string, string> {
  const cookies: Record<string, string> = {};
  for (const part of (header ?? '').split(';')) {
    const separator = part.indexOf('=');
    if (separator <= 0) continue;
    const name = part.slice(0, separator).trim();
    try {
      cookies[name] = decodeURIComponent(part.slice(separator + 1).trim());
    } catch {
      // A cookie that is not ours and not valid percent-encoding: not a session.
    }
  }
  return cookies;
}

/**
 * The dashboard user (NextAuth session) of a plain Node request, checked exactly as the pages check
 * it: NextAuth's own session callbacks run, and the user must still exist.
 */
export async function signedInUserId(req: IncomingMessage): Promise<string | null> {
  const session = await getServerSession(
    { headers: req.headers, cookies: parseCookies(req.headers.cookie) } as never,
    { getHeader() {}, setCookie() {}, setHeader() {} } as never,
    getAuthOptions(),
  );
  const id = (session?.user as { id?: string } | undefined)?.id;
  return id && (await getUserById(id)) ? id : null;
}
