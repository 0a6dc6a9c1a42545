import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { newClientId } from '@/lib/auth/oauth/client-id';
import { loopbackRedirectAllowed } from '@/lib/auth/oauth/loopback';

// The registration limit counts through db/limiter.ts, which asks the database which store to use:
// SQLite here (in memory), so the counts are RateLimiterMemory's.
process.env.DATABASE_PATH = ':memory:';
delete process.env.DATABASE_URL;
const { maxRegistrationBytes, RegistrationLimiter } = await import('@/lib/auth/oauth/registration-limits');
const { closeStore } = await import('@/db/client');

afterAll(() => closeStore());

describe('loopback redirect URIs (RFC 8252)', () => {
  const registered = ['http://127.0.0.1:8080/callback', 'http://localhost/cb?x=1', 'https://app.example/callback'];

  it('match a registered loopback URI on any port', () => {
    expect(loopbackRedirectAllowed('http://127.0.0.1:59999/callback', registered)).toBe(true);
    expect(loopbackRedirectAllowed('http://127.0.0.1/callback', registered)).toBe(true);
    expect(loopbackRedirectAllowed('http://localhost:1234/cb?x=1', registered)).toBe(true);
  });

  it('never match another host, path, query, scheme, credentials or a non-loopback URI', () => {
    for (const uri of [
      'http://localhost:59999/callback',
      'http://127.0.0.1:59999/other',
      'http://localhost:1234/cb?x=2',
      'https://127.0.0.1:59999/callback',
      'http://user@127.0.0.1:59999/callback',
      'http://127.0.0.1.evil.example:59999/callback',
      'https://app.example:444/callback',
      'not a url',
    ]) {
      expect(loopbackRedirectAllowed(uri, registered), uri).toBe(false);
    }
  });
});

describe('registration limits', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('refuses a registration larger than the cap', async () => {
    const limiter = new RegistrationLimiter(10);
    expect((await limiter.check(maxRegistrationBytes + 1, '192.0.2.1'))?.status).toBe(413);
    expect(await limiter.check(maxRegistrationBytes, '192.0.2.1')).toBeNull();
  });

  it('counts registrations per address per hour and says when to come back', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const limiter = new RegistrationLimiter(2);
    const now = 1_000_000;
    const at = (time: number) => vi.setSystemTime(time);
    at(now);
    expect(await limiter.check(100, '192.0.2.1')).toBeNull();
    at(now + 1);
    expect(await limiter.check(100, '192.0.2.1')).toBeNull();
    at(now + 1000);
    const refused = await limiter.check(100, '192.0.2.1');
    expect(refused?.status).toBe(429);
    expect(refused?.headers['Retry-After']).toBe(String(60 * 60 - 1));
    expect(await limiter.check(100, '192.0.2.2')).toBeNull();
    at(now + 60 * 60 * 1000);
    expect(await limiter.check(100, '192.0.2.1')).toBeNull();
  });
});

describe('client ids', () => {
  it('are 128 random bits that never begin with a dash, so a command line does not read one as an option', () => {
    const ids = Array.from({ length: 2000 }, () => newClientId());
    expect(new Set(ids).size).toBe(ids.length);
    for (const id of ids) {
      expect(id).toMatch(/^[A-Za-z][A-Za-z0-9_-]{21,}$/);
      expect(Buffer.from(id.slice(id.length - 22), 'base64url')).toHaveLength(16);
    }
  });
});
