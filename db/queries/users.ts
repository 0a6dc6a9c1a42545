import { eq } from 'drizzle-orm';
import { getDb } from '../client';
import { users } from '../schema';

export type User = typeof users.$inferSelect;

export function getUserByEmail(email: string): User | undefined {
  return getDb().select().from(users).where(eq(users.email, email.toLowerCase())).get();
}

export function getUserById(id: string): User | undefined {
  return getDb().select().from(users).where(eq(users.id, id)).get();
}

export function createUser(input: { email: string; name?: string | null; passwordHash?: string | null }): User {
  return getDb()
    .insert(users)
    .values({
      id: crypto.randomUUID(),
      email: input.email.toLowerCase(),
      name: input.name ?? null,
      passwordHash: input.passwordHash ?? null,
      createdAt: Date.now(),
    })
    .returning()
    .all()[0];
}

export function setUserPasswordHash(id: string, passwordHash: string): void {
  getDb().update(users).set({ passwordHash }).where(eq(users.id, id)).run();
}
