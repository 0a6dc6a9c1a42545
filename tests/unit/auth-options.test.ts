import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes, scryptSync } from 'node:crypto';
import type { Account, Profile, User as AuthUser } from 'next-auth';
import type { JWT } from 'next-auth/jwt';
import { afterAll, beforeEach, describe, expect, it, vi } from 'vitest';

/**
 * Counts scrypt runs and records the cost each was asked for (the real function still does the work),
 * to see which sign-ins hash, and at what cost.
 */
type ScryptCost = { keylen: number; N: number; r: number; p: number };
const scryptCalls = vi.hoisted(() => ({ count: 0, costs: [] as ScryptCost[] }));
vi.mock('node:crypto', async (importOriginal) => {
  const crypto = await importOriginal<typeof import('node:crypto')>();
  const scrypt = (...args: Parameters<typeof crypto.scrypt>) => {
    scryptCalls.count += 1;
    const [, , keylen, options] = args as unknown as [unknown, unknown, number, { N: number; r: number; p: number }];
    scryptCalls.costs.push({ keylen, N: options.N, r: options.r, p: options.p });
    return (crypto.scrypt as (...a: unknown[]) => void)(...args);
  };
  return { ...crypto, scrypt, default: { ...crypto, scrypt } };
});

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'auth-options-'));
process.env.DATABASE_PATH = path.join(dataDir, 'app.db');
process.env.NEXTAUTH_SECRET = 'a test secret that is long enough to sign sessions';

const { buildAuthOptions, resolveOAuthSignIn } = await import('@/lib/auth/options');
const { hashPassword } = await import('@/lib/auth/password');
const { endAllSessions, registerUser } = await import('@/lib/auth/accounts');
const { issueAccessToken, verifyBearer } = await import('@/lib/auth/tokens');
const { getDb } = await import('@/db/client');
const { createUser, getUserByEmail, getUserById } = await import('@/db/queries/users');
const { getConsent, upsertConsent, upsertOAuthRecord } = await import('@/db/queries/oauth');
const { createNotificationTarget, setNotificationPreferences } = await import('@/db/queries/notifications');

afterAll(() => {
  getDb().$client.close();
  fs.rmSync(dataDir, { recursive: true, force: true });
});

let signedInUserId: string | null = null;
const options = buildAuthOptions({ signedInUserId: async () => signedInUserId });
beforeEach(() => {
  signedInUserId = null;
});

const appUrl = 'http://localhost:3000';

const credentials = options.providers.find((provider) => provider.id === 'credentials') as unknown as {
  options: { authorize(credentials: Record<string, string>, request: object): Promise<AuthUser | null> };
};
const authorize = (email: string, password: string) => credentials.options.authorize({ email, password }, {});

const readSession = (token: JWT, email: string) =>
  options.callbacks!.session!({ session: { user: { email }, expires: 'later' }, token, user: undefined as never, newSession: undefined, trigger: 'update' });

/** A connected app as the authorization server stores it: a grant, an access token of it, and the consent. */
async function grantApp(userId: string) {
  const clientId = `client-${(counter += 1)}`;
  const grantId = `grant-${counter}`;
  await upsertOAuthRecord({ model: 'Grant', idHash: `grant-hash-${counter}`, payload: { accountId: userId, clientId }, grantId: null, uid: null, expiresAt: null });
  await upsertOAuthRecord({ model: 'AccessToken', idHash: `token-hash-${counter}`, payload: { accountId: userId, clientId, grantId }, grantId, uid: null, expiresAt: null });
  await upsertConsent({ userId, clientId, clientName: 'An app', registration: 'dynamic', redirectHost: null, grantId, scope: 'mcp', allowedAt: Date.now() });
  const records = () =>
    getDb().$client.prepare("SELECT model FROM oauth_records WHERE json_extract(payload, '$.clientId') = ? ORDER BY model").all(clientId);
  return { clientId, records };
}

/** A webhook, a subscribed browser, e-mail and preferences, as someone holding the account would set them up. */
async function setUpNotifications(user: { id: string; email: string; sessionGeneration: number }) {
  const base = { userId: user.id, events: ['task.input_required' as const], options: {} };
  await createNotificationTarget({ ...base, channel: 'webhook', address: 'https://hooks.example.net/mine', secret: 'whsec_x' });
  await createNotificationTarget({ ...base, channel: 'push', address: 'https://push.example.net/mine', secret: '{}', sessionGeneration: user.sessionGeneration });
  await createNotificationTarget({ ...base, channel: 'email', address: user.email, secret: null });
  await setNotificationPreferences({ userId: user.id, quietWhileLive: 1, maxPerMinute: 1 });
  return () => ({
    targets: getDb().$client.prepare('SELECT channel FROM notification_targets WHERE user_id = ? ORDER BY channel').all(user.id).map((row: any) => row.channel),
    preferences: getDb().$client.prepare('SELECT count(*) AS n FROM notification_preferences WHERE user_id = ?').get(user.id),
  });
}

const linkedRows = (userId: string) =>
  getDb().$client.prepare('SELECT provider, provider_account_id AS providerAccountId FROM linked_accounts WHERE user_id = ?').all(userId);
const userCount = () => (getDb().$client.prepare('SELECT count(*) AS n FROM users').get() as { n: number }).n;
let counter = 0;
const freshEmail = (label: string) => `${label}-${(counter += 1)}@example.com`;

/** What next-auth hands the callbacks after GitHub's userinfo request (ours adds `verifiedPrimaryEmail`). */
function github(id: number, email: string, verified: boolean) {
  const profile = { id, login: `user${id}`, name: `GitHub ${id}`, email, verifiedPrimaryEmail: verified ? email : null } as unknown as Profile;
  const account: Account = { provider: 'github', type: 'oauth', providerAccountId: String(id) };
  const user: AuthUser = { id: String(id), name: `GitHub ${id}`, email: verified ? email : null };
  return { profile, account, user };
}

type GithubEmailEntry = { email: string; primary: boolean; verified: boolean };

/**
 * Runs our GitHub userinfo request as next-auth would after the code exchange: the profile from the
 * client, the address list from GitHub's /user/emails (answered here: there is no network to GitHub).
 * `typedEmail` is the address on the public profile, which anyone can type.
 */
async function githubThroughUserinfo(id: number, typedEmail: string, emails: GithubEmailEntry[] | 'unavailable') {
  process.env.GITHUB_ID = 'github-client';
  process.env.GITHUB_SECRET = 'github-secret';
  const withGithub = buildAuthOptions({ signedInUserId: async () => signedInUserId });
  delete process.env.GITHUB_ID;
  delete process.env.GITHUB_SECRET;
  const provider = withGithub.providers.find((candidate) => candidate.id === 'github') as unknown as {
    options: {
      userinfo: { request(context: { client: { userinfo(token: string): Promise<object> }; tokens: { access_token: string } }): Promise<Profile> };
      profile(profile: Profile): { email: string | null };
    };
  };
  const asked: Array<{ url: string; authorization: string | null }> = [];
  vi.stubGlobal('fetch', async (url: string, init: RequestInit) => {
    asked.push({ url, authorization: new Headers(init.headers).get('authorization') });
    return emails === 'unavailable' ? new Response('rate limited', { status: 403 }) : Response.json(emails);
  });
  try {
    const profile = await provider.options.userinfo.request({
      client: { userinfo: async () => ({ id, login: `user${id}`, name: `GitHub ${id}`, email: typedEmail }) },
      tokens: { access_token: `gho_${id}` },
    });
    expect(asked).toEqual([{ url: 'https://api.github.com/user/emails', authorization: `token gho_${id}` }]);
    const { email } = provider.options.profile(profile);
    const account: Account = { provider: 'github', type: 'oauth', providerAccountId: String(id) };
    return { profile, account, user: { id: String(id), name: `GitHub ${id}`, email } as AuthUser };
  } finally {
    vi.unstubAllGlobals();
  }
}

function google(sub: string, email: string, emailVerified: unknown) {
  const profile = { sub, email, email_verified: emailVerified, name: `Google ${sub}` } as unknown as Profile;
  const account: Account = { provider: 'google', type: 'oauth', providerAccountId: sub };
  const user: AuthUser = { id: sub, name: `Google ${sub}`, email };
  return { profile, account, user };
}

/** Runs the sign-in as next-auth does: `signIn`, then (when allowed) `jwt` for the new session token. */
async function oauthSignIn(input: { profile: Profile; account: Account; user: AuthUser }): Promise<{ allowed: true | string; token?: JWT }> {
  const allowed = await options.callbacks!.signIn!({ user: input.user, account: input.account, profile: input.profile });
  if (allowed !== true) return { allowed: allowed as string };
  const token = await options.callbacks!.jwt!({ token: {}, user: input.user, account: input.account, trigger: 'signIn' });
  return { allowed, token };
}

describe('OAuth sign-in', () => {
  it('joins the account with the same email when GitHub says that primary email is verified', async () => {
    const email = freshEmail('gh-verified');
    const existing = await createUser({ email, passwordHash: null });
    const emails = [
      { email: freshEmail('gh-old'), primary: false, verified: true },
      { email, primary: true, verified: true },
    ];
    const { allowed, token } = await oauthSignIn(await githubThroughUserinfo(101, freshEmail('gh-typed'), emails));
    expect(allowed).toBe(true);
    expect(token?.uid).toBe(existing.id);
    expect(linkedRows(existing.id)).toEqual([{ provider: 'github', providerAccountId: '101' }]);
  });

  it('takes only GitHub’s primary and verified address: not a verified secondary, an unverified primary or the profile’s', async () => {
    const email = freshEmail('gh-pick');
    const existing = await createUser({ email });
    const lists: Array<GithubEmailEntry[] | 'unavailable'> = [
      [
        { email, primary: false, verified: true },
        { email: freshEmail('gh-primary'), primary: true, verified: false },
      ],
      [{ email, primary: true, verified: false }],
      [],
      'unavailable',
    ];
    for (const [index, emails] of lists.entries()) {
      const signIn = await githubThroughUserinfo(110 + index, email, emails);
      expect(signIn.user.email).toBeNull();
      expect((await oauthSignIn(signIn)).allowed).toBe('/signin?error=OAuthEmailNotVerified');
    }
    expect(linkedRows(existing.id)).toEqual([]);
  });

  it('refuses to join an account by an email GitHub has not verified, and creates nothing', async () => {
    const email = freshEmail('gh-unverified');
    const existing = await createUser({ email });
    const before = userCount();
    const { allowed } = await oauthSignIn(github(102, email, false));
    expect(allowed).toBe('/signin?error=OAuthEmailNotVerified');
    expect(linkedRows(existing.id)).toEqual([]);
    expect(userCount()).toBe(before);
  });

  it('joins by Google email only when email_verified is true', async () => {
    const email = freshEmail('google');
    const existing = await createUser({ email });
    for (const claim of [false, 'false', undefined]) {
      expect((await oauthSignIn(google('g-1', email, claim))).allowed).toBe('/signin?error=OAuthEmailNotVerified');
    }
    expect(linkedRows(existing.id)).toEqual([]);
    const { allowed, token } = await oauthSignIn(google('g-1', email, true));
    expect(allowed).toBe(true);
    expect(token?.uid).toBe(existing.id);
  });

  it('creates an account for a new verified email and signs in by the provider id from then on', async () => {
    const email = freshEmail('gh-new');
    const first = await oauthSignIn(github(103, email, true));
    const created = (await getUserByEmail(email))!;
    expect(first.token?.uid).toBe(created.id);
    expect(created.passwordHash).toBeNull();
    // The person later changes their GitHub email (unverified yet): the link, not the email, decides.
    const again = await oauthSignIn(github(103, freshEmail('gh-changed'), false));
    expect(again.token?.uid).toBe(created.id);
    expect(linkedRows(created.id)).toHaveLength(1);
  });

  it('links any provider account to the person already signed in, verified email or not', async () => {
    const person = await createUser({ email: freshEmail('signed-in') });
    signedInUserId = person.id;
    const { allowed, token } = await oauthSignIn(github(104, freshEmail('other-address'), false));
    expect(allowed).toBe(true);
    expect(token?.uid).toBe(person.id);
    expect(linkedRows(person.id)).toEqual([{ provider: 'github', providerAccountId: '104' }]);
  });

  it('refuses a provider account that belongs to someone else while signed in as another person', async () => {
    const owner = await createUser({ email: freshEmail('owner') });
    signedInUserId = owner.id;
    await oauthSignIn(github(105, freshEmail('x'), false));
    const intruder = await createUser({ email: freshEmail('intruder') });
    signedInUserId = intruder.id;
    expect((await oauthSignIn(github(105, freshEmail('y'), true))).allowed).toBe('/signin?error=OAuthAccountLinkedElsewhere');
    expect(linkedRows(intruder.id)).toEqual([]);
  });

  it('creates no account when sign-up is closed, but still joins existing ones and signs linked ones in', async () => {
    const closed = { signedInUserId: null, allowSignup: false };
    const before = userCount();
    const newcomer = { provider: 'github', providerAccountId: '106', email: freshEmail('closed-new'), emailVerified: true, name: null };
    expect(await resolveOAuthSignIn(newcomer, closed)).toEqual({ ok: false, refusal: 'SignupClosed' });
    expect(userCount()).toBe(before);
    const existing = await createUser({ email: freshEmail('closed-existing') });
    expect(await resolveOAuthSignIn({ ...newcomer, providerAccountId: '107', email: existing.email }, closed)).toEqual({ ok: true, userId: existing.id });
    expect(await resolveOAuthSignIn({ ...newcomer, providerAccountId: '107', email: null, emailVerified: false }, closed)).toEqual({ ok: true, userId: existing.id });
  });

  it('a verified email joining an account that has a password ends that password and everything it let in', async () => {
    const email = freshEmail('squatted');
    // Someone signs up first with the owner's address and a password of theirs, and sets up access.
    const squatter = await registerUser({ email, password: 'the squatter’s password' });
    if (!squatter.ok) throw new Error(squatter.message);
    const squatterSession = (await authorize(email, 'the squatter’s password'))!;
    const squatterToken = await options.callbacks!.jwt!({ token: {}, user: squatterSession, account: { provider: 'credentials', type: 'credentials', providerAccountId: squatterSession.id }, trigger: 'signIn' });
    const { token: personalToken } = await issueAccessToken({ userId: squatter.user.id, name: 'squatter’s client' });
    const app = await grantApp(squatter.user.id);
    const notifications = await setUpNotifications(squatter.user);
    expect(notifications()).toEqual({ targets: ['email', 'push', 'webhook'], preferences: { n: 1 } });
    expect((await getUserById(squatter.user.id))!.reclaimedAt).toBeNull();

    const { allowed, token } = await oauthSignIn(google('g-owner', email, true));
    expect(allowed).toBe(true);
    expect(token?.uid).toBe(squatter.user.id);
    expect((await getUserById(squatter.user.id))!.passwordHash).toBeNull();
    expect(await authorize(email, 'the squatter’s password')).toBeNull();
    expect(await readSession(squatterToken, email)).toEqual({ expires: 'later' });
    expect(await readSession(token!, email)).toMatchObject({ user: { id: squatter.user.id } });
    expect(await verifyBearer(`Bearer ${personalToken}`, appUrl)).toEqual({ ok: false, reason: 'revoked' });
    expect(app.records()).toEqual([]);
    expect(await getConsent(squatter.user.id, app.clientId)).toBeUndefined();
    // Nothing the squatter set up tells them of the owner's tasks; the dashboard says what went, and the
    // address Google vouched for is proved.
    expect(notifications()).toEqual({ targets: [], preferences: { n: 0 } });
    const owner = (await getUserById(squatter.user.id))!;
    expect(owner.reclaimedAt).toEqual(expect.any(Number));
    expect(owner.verifiedEmail).toBe(email);
  });

  it('a verified email joining an account without a password keeps its sessions, tokens and apps', async () => {
    const email = freshEmail('operator-made');
    const user = await createUser({ email });
    const { token: personalToken } = await issueAccessToken({ userId: user.id, name: 'client' });
    const app = await grantApp(user.id);
    const notifications = await setUpNotifications(user);
    expect((await oauthSignIn(google('g-operator-made', email, true))).allowed).toBe(true);
    expect(notifications()).toEqual({ targets: ['email', 'push', 'webhook'], preferences: { n: 1 } });
    expect((await getUserById(user.id))!.reclaimedAt).toBeNull();
    expect((await getUserById(user.id))!.sessionGeneration).toBe(user.sessionGeneration);
    expect(await verifyBearer(`Bearer ${personalToken}`, appUrl)).toMatchObject({ ok: true });
    expect(app.records()).toHaveLength(2);
    expect(await getConsent(user.id, app.clientId)).toBeDefined();
  });

  it('proves the address a provider vouches for, and only that address of the account it signs in', async () => {
    const created = freshEmail('gh-created');
    await oauthSignIn(github(120, created, true));
    expect((await getUserByEmail(created))!.verifiedEmail).toBe(created);

    // An account linked before addresses were proved is proved at its next sign-in that vouches for it.
    const linkedEarlier = await createUser({ email: freshEmail('linked-earlier') });
    signedInUserId = linkedEarlier.id;
    await oauthSignIn(github(121, freshEmail('elsewhere'), false));
    signedInUserId = null;
    expect((await getUserById(linkedEarlier.id))!.verifiedEmail).toBeNull();
    await oauthSignIn(github(121, linkedEarlier.email, false));
    expect((await getUserById(linkedEarlier.id))!.verifiedEmail).toBeNull();
    await oauthSignIn(github(121, linkedEarlier.email, true));
    expect((await getUserById(linkedEarlier.id))!.verifiedEmail).toBe(linkedEarlier.email);

    // Google vouching for another address proves nothing of this account's.
    const person = await createUser({ email: freshEmail('google-person') });
    signedInUserId = person.id;
    await oauthSignIn(google('g-other-address', freshEmail('google-other'), true));
    expect((await getUserById(person.id))!.verifiedEmail).toBeNull();
  });

  it('puts the session generation in the token; a raised generation leaves the session without a user', async () => {
    const email = freshEmail('generation');
    const user = await createUser({ email });
    getDb().$client.prepare('UPDATE users SET session_generation = 4 WHERE id = ?').run(user.id);
    const { token } = await oauthSignIn(github(108, email, true));
    expect(token?.gen).toBe(4);
    const read = () =>
      options.callbacks!.session!({ session: { user: { email }, expires: 'later' }, token: token!, user: undefined as never, newSession: undefined, trigger: 'update' });
    expect((await read()).user).toMatchObject({ id: user.id, email });
    await endAllSessions(user.id);
    expect(await read()).toEqual({ expires: 'later' });
  });
});

describe('email and password sign-in', () => {

  it('signs in with the right password only', async () => {
    const email = freshEmail('password');
    const user = await createUser({ email, passwordHash: await hashPassword('correct horse battery staple') });
    expect(await authorize(email.toUpperCase(), 'correct horse battery staple')).toMatchObject({ id: user.id });
    expect(await authorize(email, 'wrong horse battery staple')).toBeNull();
  });

  it('hashes at full cost for unknown accounts and accounts without a password, as it does for real ones', async () => {
    const real = await createUser({ email: freshEmail('real'), passwordHash: await hashPassword('the real password') });
    scryptCalls.costs = [];
    expect(await authorize(real.email, 'some password')).toBeNull();
    const realCost = scryptCalls.costs;
    expect(realCost).toEqual([{ keylen: 64, N: 2 ** 17, r: 8, p: 1 }]);
    const passwordless = await createUser({ email: freshEmail('no-password') });
    for (const email of [freshEmail('nobody'), passwordless.email]) {
      scryptCalls.costs = [];
      expect(await authorize(email, 'some password')).toBeNull();
      expect(scryptCalls.costs.at(-1)).toEqual(realCost[0]);
    }
  });

  it('refuses an over-long password before hashing anything', async () => {
    const email = freshEmail('long');
    const longPassword = 'x'.repeat(201);
    await createUser({ email, passwordHash: await hashPassword(longPassword) });
    scryptCalls.count = 0;
    expect(await authorize(email, longPassword)).toBeNull();
    expect(await authorize(email, 'y'.repeat(1_000_000))).toBeNull();
    expect(scryptCalls.count).toBe(0);
  });

  it('upgrades a hash with older parameters at sign-in, keeping the password and the sessions', async () => {
    const email = freshEmail('legacy');
    const salt = randomBytes(16);
    const digest = scryptSync('an older password', salt, 64, { N: 16384, r: 8, p: 1 });
    const legacy = ['scrypt', 16384, 8, 1, salt.toString('base64url'), digest.toString('base64url')].join('$');
    const user = await createUser({ email, passwordHash: legacy });
    expect(await authorize(email, 'an older password')).toMatchObject({ id: user.id });
    const upgraded = (await getUserById(user.id))!;
    expect(upgraded.passwordHash).not.toBe(legacy);
    expect(Number(upgraded.passwordHash!.split('$')[1])).toBeGreaterThanOrEqual(2 ** 17);
    expect(upgraded.sessionGeneration).toBe(user.sessionGeneration);
    expect(await authorize(email, 'an older password')).toMatchObject({ id: user.id });
  });
});

describe('sign-up', () => {
  it('refuses a name holding a control character, creating no account, and cuts a long one between characters', async () => {
    const email = freshEmail('named');
    for (const name of ['Ada\u0000', 'Ada\nLovelace', 'Ada\u007f']) {
      expect(await registerUser({ email, password: 'a long enough password', name })).toEqual({ ok: false, field: 'name', message: 'A name cannot hold control characters.' });
    }
    expect(await getUserByEmail(email)).toBeUndefined();
    // 101 emoji, each two UTF-16 units: the name keeps the first 100 whole, with no half of one left over.
    const made = await registerUser({ email, password: 'a long enough password', name: `  ${'🤖'.repeat(101)}  ` });
    if (!made.ok) throw new Error(made.message);
    expect((await getUserByEmail(email))!.name).toBe('🤖'.repeat(100));
  });

  it('says an email has an account only after a full-cost hash, as a sign-in would spend', async () => {
    const taken = await createUser({ email: freshEmail('taken'), passwordHash: await hashPassword('the owner’s password') });
    scryptCalls.costs = [];
    const result = await registerUser({ email: taken.email, password: 'a guess at an account' });
    expect(result).toMatchObject({ ok: false, field: 'email' });
    expect(scryptCalls.costs).toEqual([{ keylen: 64, N: 2 ** 17, r: 8, p: 1 }]);
  });
});
