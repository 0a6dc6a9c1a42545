import { and, asc, eq, gt, isNull } from 'drizzle-orm';
import { changes, defineQuery, first, rows, type Program } from '../run';
import type { emailConfirmations } from '../schema';
import { resumeEmailTargetOf } from './notifications';

export type EmailConfirmationRow = typeof emailConfirmations.$inferSelect;

export const createEmailConfirmation = defineQuery(function* (q, confirmation: Omit<EmailConfirmationRow, 'usedAt'>): Program<void> {
  yield* changes(q.db.insert(q.t.emailConfirmations).values(confirmation));
});

/** When the user's links sent since `since` were sent, oldest first: sending one is bounded per hour. */
export const listEmailConfirmationTimesSince = defineQuery(function* (q, userId: string, since: number): Program<number[]> {
  const { emailConfirmations: confirmations } = q.t;
  const found = yield* rows(
    q.db
      .select({ createdAt: confirmations.createdAt })
      .from(confirmations)
      .where(and(eq(confirmations.userId, userId), gt(confirmations.createdAt, since)))
      .orderBy(asc(confirmations.createdAt)),
  );
  return found.map((row) => row.createdAt);
});

export type EmailConfirmationOutcome = 'confirmed' | 'unknown' | 'another-account' | 'another-address' | 'used' | 'expired';

/**
 * Uses the link `id` for `userId`'s `email`: marks it used (once: a conditional UPDATE decides between
 * two presses), records the address as proved, and lets the e-mail held for it go. Anything else changes
 * nothing and says why.
 */
export const useEmailConfirmation = defineQuery(
  function* (q, id: string, userId: string, email: string, now: number): Program<EmailConfirmationOutcome> {
    const { emailConfirmations: confirmations, users } = q.t;
    const confirmation = yield* first(q.db.select().from(confirmations).where(eq(confirmations.id, id)));
    if (!confirmation) return 'unknown';
    if (confirmation.userId !== userId) return 'another-account';
    if (confirmation.email !== email) return 'another-address';
    if (confirmation.usedAt !== null) return 'used';
    if (confirmation.expiresAt <= now) return 'expired';
    const taken = yield* changes(q.db.update(confirmations).set({ usedAt: now }).where(and(eq(confirmations.id, id), isNull(confirmations.usedAt))));
    if (taken === 0) return 'used';
    yield* changes(q.db.update(users).set({ verifiedEmail: email }).where(and(eq(users.id, userId), eq(users.email, email))));
    yield* resumeEmailTargetOf(q, userId);
    return 'confirmed';
  },
  { transaction: 'immediate' },
);
