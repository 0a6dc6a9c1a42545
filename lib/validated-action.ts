import { z } from 'zod';
import type { User } from '@/db/queries/users';
import { getCurrentUser } from '@/lib/auth/session';

/** The arguments a form action gets: the previous state (not trusted, not used) and the posted form. */
export const formActionArguments = z.tuple([z.unknown(), z.instanceof(FormData)]);

/**
 * A server action that trusts neither its caller nor its arguments: anyone can post any arguments
 * to an action's endpoint. The arguments are parsed with the schema and the signed-in user loaded
 * before the action runs; otherwise it answers with the given refusal instead of throwing (a 500).
 */
export function validatedActionWithUser<Schema extends z.ZodTuple, Result>(
  schema: Schema,
  refusals: { signedOut: Result; invalid: Result },
  action: (user: User, ...args: z.output<Schema>) => Promise<Result>,
): (...args: z.input<Schema>) => Promise<Result> {
  return async (...args) => {
    const parsed = schema.safeParse(args);
    if (!parsed.success) return refusals.invalid;
    const user = await getCurrentUser();
    if (!user) return refusals.signedOut;
    return action(user, ...(parsed.data as z.output<Schema>));
  };
}
