import { getServerSession } from 'next-auth';
import { cookies } from 'next/headers';
import { redirect } from 'next/navigation';
import { getUserById, type User } from '@/db/queries/users';
import { StorageUnreadable, type StorageTroubleKind } from '@/db/errors';
import { storageHealth } from '@/lib/storage/health';
import { getAuthOptions } from './options';

/**
 * The signed-in user, or null. A session signed before the user's current session generation (raised by
 * a password change or "Sign out everywhere") has no user, although its cookie is still validly signed:
 * the session callback in ./options decides that on every read.
 */
export async function getCurrentUser(): Promise<User | null> {
  const session = await getServerSession(getAuthOptions());
  // The session could not be read for storage trouble: thrown as such (the page or action says why),
  // never taken for a signed-out person.
  const trouble = (session as { storageTrouble?: StorageTroubleKind } | null)?.storageTrouble;
  if (trouble) {
    storageHealth().noteTrouble(trouble);
    throw new StorageUnreadable(trouble);
  }
  const id = (session?.user as { id?: string } | undefined)?.id;
  return id ? ((await getUserById(id)) ?? null) : null;
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

/** How often a long-lived dashboard stream re-reads its person's session generation. */
const sessionRecheckMs = 2000;

/**
 * For streams that outlive the request that opened them: calls `end` once the sessions `user` was read
 * under have ended ("Sign out everywhere", a new password, a deleted account), until `signal` aborts.
 * It reads the database, so an end decided by another process or instance is seen too.
 */
export function whenSessionsEnd(user: User, signal: AbortSignal, end: () => void): void {
  const timer = setInterval(() => {
    getUserById(user.id).then(
      (current) => {
        if (current?.sessionGeneration !== user.sessionGeneration && !signal.aborted) end();
      },
      (error: unknown) => console.error(`Could not re-read the session of user ${user.id}:`, error),
    );
  }, sessionRecheckMs);
  timer.unref?.();
  signal.addEventListener('abort', () => clearInterval(timer), { once: true });
}
