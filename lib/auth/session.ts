import { getServerSession } from 'next-auth';
import { cookies } from 'next/headers';
import { redirect } from 'next/navigation';
import { getUserById, type User } from '@/db/queries/users';
import { getAuthOptions } from './options';

/**
 * The signed-in user, or null. Checks that the user still exists and that the session was signed in
 * their current session generation: a password change or "Sign out everywhere" raises it, which ends
 * every older session at its next read, although its cookie is still validly signed.
 */
export async function getCurrentUser(): Promise<User | null> {
  const session = await getServerSession(getAuthOptions());
  const claims = session?.user as { id?: string; sessionGeneration?: number } | undefined;
  if (!claims?.id) return null;
  const user = getUserById(claims.id);
  return user && user.sessionGeneration === (claims.sessionGeneration ?? 0) ? user : null;
}

/** For pages: the signed-in user, or a redirect to sign-in that says why and comes back here. */
export async function requireUser(returnTo: string): Promise<User> {
  const user = await getCurrentUser();
  if (user) return user;
  const jar = await cookies();
  const hadSession = jar.getAll().some((cookie) => cookie.name.endsWith('next-auth.session-token'));
  const query = new URLSearchParams({ callbackUrl: returnTo, ...(hadSession ? { reason: 'expired' } : {}) });
  redirect(`/signin?${query}`);
}
