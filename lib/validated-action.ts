import { z } from 'zod';
import type { User } from '@/db/queries/users';
import { getCurrentUser } from '@/lib/auth/session';
import { storageTroubleIn, storageTroubleSentence } from '@/lib/storage/trouble';

/** The arguments a form action gets: the previous state (not trusted, not used) and the posted form. */
export const formActionArguments = z.tuple([z.unknown(), z.instanceof(FormData)]);

/**
 * A server action that trusts neither its caller nor its arguments: anyone can post any arguments
 * to an action's endpoint. The arguments are parsed with the schema and the signed-in user loaded
 * before the action runs; otherwise it answers with the given refusal instead of throwing (a 500).
 * Storage trouble (reading the session, or in the action) is answered with `refusals.storage`, when given.
 */
export function validatedActionWithUser<Schema extends z.ZodTuple, Result>(
  schema: Schema,
  refusals: { signedOut: Result; invalid: Result; storage?: (sentence: string) => Result },
  action: (user: User, ...args: z.output<Schema>) => Promise<Result>,
): (...args: z.input<Schema>) => Promise<Result> {
  return async (...args) => {
    const parsed = schema.safeParse(args);
    if (!parsed.success) return refusals.invalid;
    try {
      const user = await getCurrentUser();
      if (!user) return refusals.signedOut;
      return await action(user, ...(parsed.data as z.output<Schema>));
    } catch (error) {
      // Storage in trouble (full, busy, read-only): the person is told which, and when to try again.
      const trouble = refusals.storage && storageTroubleIn(error);
      if (trouble) return refusals.storage!(storageTroubleSentence(trouble));
      throw error;
    }
  };
}
