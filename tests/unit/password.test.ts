import { randomBytes, scryptSync } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { hashPassword, needsRehash, verifyPassword } from '@/lib/auth/password';

/** A hash as the earlier parameters (N=2^14) wrote it. */
function legacyHash(password: string): string {
  const salt = randomBytes(16);
  const digest = scryptSync(password.normalize('NFKC'), salt, 64, { N: 16384, r: 8, p: 1 });
  return ['scrypt', 16384, 8, 1, salt.toString('base64url'), digest.toString('base64url')].join('$');
}

describe('password hashing', () => {
  it('hashes with at least the OWASP scrypt minimum and checks the password', async () => {
    const stored = await hashPassword('correct horse battery staple');
    const [scheme, N, r, p] = stored.split('$');
    expect(scheme).toBe('scrypt');
    expect(Number(N)).toBeGreaterThanOrEqual(2 ** 17);
    expect([Number(r), Number(p)]).toEqual([8, 1]);
    expect(await verifyPassword('correct horse battery staple', stored)).toBe(true);
    expect(await verifyPassword('correct horse battery stapler', stored)).toBe(false);
    expect(needsRehash(stored)).toBe(false);
  });

  it('still accepts hashes made with the older parameters, and marks them for an upgrade', async () => {
    const stored = legacyHash('an older password');
    expect(await verifyPassword('an older password', stored)).toBe(true);
    expect(await verifyPassword('another password', stored)).toBe(false);
    expect(needsRehash(stored)).toBe(true);
  });

  it('never accepts a stored hash whose digest is empty or cut short', async () => {
    const [scheme, N, r, p, salt, digest] = legacyHash('whatever').split('$');
    const emptyDigest = [scheme, N, r, p, salt, ''].join('$');
    const shortDigest = [scheme, N, r, p, salt, digest.slice(0, 8)].join('$');
    for (const stored of [emptyDigest, shortDigest]) {
      expect(await verifyPassword('any password at all', stored)).toBe(false);
      expect(await verifyPassword('', stored)).toBe(false);
    }
  });

  it('refuses malformed stored hashes instead of throwing', async () => {
    const [, , , , salt, digest] = legacyHash('whatever').split('$');
    for (const stored of [null, '', 'plain', `bcrypt$16384$8$1$${salt}$${digest}`, `scrypt$1000$8$1$${salt}$${digest}`, `scrypt$16384$8$1$$${digest}`, `scrypt$${2 ** 30}$8$1$${salt}$${digest}`]) {
      expect(await verifyPassword('whatever', stored)).toBe(false);
    }
  });
});
