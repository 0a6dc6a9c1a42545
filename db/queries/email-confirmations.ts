import { and, asc, eq, gt, isNull } from 'drizzle-orm';
import { changes, defineQuery, first, lock, rows, type Program } from '../run';
import type { emailConfirmations } from '../schema';
import { resumeEmailTargetOf } from './notifications';

export type EmailConfirmationRow = typeof emailConfirmations.$inferSelect;

/**
 * Stores a link about to be sent, unless the user was sent `perHour` links in the hour before `now`: then
 * nothing is stored and the times of those links (oldest first) say when the next may go. Counted and
 * stored in one transaction under a per-user lock, so presses at once cannot pass the allowance together.
 */
export const reserveEmailConfirmation = defineQuery(
  function* (q, confirmation: Omit<EmailConfirmationRow, 'usedAt'>, perHour: number): Program<{ ok: true } | { ok: false; sentAt: number[] }> {
    const { emailConfirmations: confirmations } = q.t;
    yield* lock(q, `email-confirmations:${confirmation.userId}`);
    const recent = yield* rows(
      q.db
        .select({ createdAt: confirmations.createdAt })
        .from(confirmations)
        .where(and(eq(confirmations.userId, confirmation.userId), gt(confirmations.createdAt, confirmation.createdAt - 60 * 60 * 1000)))
        .orderBy(asc(confirmations.createdAt)),
    );
    if (recent.length >= perHour) return { ok: false, sentAt: recent.map((row) => row.createdAt) };
    yield* changes(q.db.insert(q.t.emailConfirmations).values(confirmation));
    return { ok: true };
  },
  { transaction: 'immediate' },
);

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
