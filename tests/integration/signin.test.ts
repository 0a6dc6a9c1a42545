import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { callServerAction, cookieHeader, setPassword as setPasswordWithCli, signIn as signInWithPassword } from '../helpers/dashboard';
import { initializeWith } from '../helpers/mcp';
import { createToken, startServer, testDatabase, type TestServer } from '../helpers/server';

// Each sign-in hashes with scrypt at 128 MiB, and the CLIs start their own Node: slow on a busy machine.
vi.setConfig({ testTimeout: 120_000 });

const root = path.resolve(__dirname, '..', '..');
let server: TestServer;
let dataRoot: string;

beforeAll(async () => {
  // The data folder does not exist yet: the server creates it, so its mode is the server's doing.
  dataRoot = fs.mkdtempSync(path.join(os.tmpdir(), 'signin-data-'));
  // Behind a "trusted proxy", each test names its own client address in X-Forwarded-For.
  server = await startServer({
    DATABASE_PATH: path.join(dataRoot, 'fresh', 'app.db'),
    TRUST_PROXY: 'true',
    SIGNIN_MAX_PER_ACCOUNT: '3',
    SIGNIN_MAX_PER_ACCOUNT_ALL_ADDRESSES: '6',
    SIGNIN_MAX_PER_IP: '5',
  });
});

afterAll(async () => {
  await server?.stop();
  fs.rmSync(dataRoot, { recursive: true, force: true });
});

function setPassword(email: string, password: string, flags: string[] = []) {
  const result = setPasswordWithCli(server, email, password, flags);
  expect(result.status, result.stderr).toBe(0);
  return result.stderr;
}

/** Creates a user with a password; returns the personal access token it was created with. */
function makeUser(email: string, password: string): string {
  const token = createToken(server, email);
  setPassword(email, password);
  return token;
}

/** Whether /mcp lets a bearer token in (an initialize it answers, rather than 401). */
async function bearerAccepted(token: string): Promise<boolean> {
  const { status } = await initializeWith(server.mcpUrl, `Bearer ${token}`);
  expect([200, 401]).toContain(status);
  return status === 200;
}

/** Presses "Sign out everywhere" the way the dashboard's button does: its server action, with this session. */
const signOutEverywhere = (cookie: string, alsoTokensAndApps: boolean) =>
  callServerAction(server, {
    page: '/tasks',
    filename: 'app/(auth)/actions.ts',
    exportedName: 'signOutEverywhereAction',
    body: JSON.stringify([{ alsoTokensAndApps }]),
    cookie,
  });

/** Reads a response body until it ends; false when it is still open after `withinMs`. */
async function endsWithin(response: Response, withinMs: number): Promise<boolean> {
  const reader = response.body!.getReader();
  const deadline = new Promise<'open'>((resolve) => setTimeout(() => resolve('open'), withinMs));
  for (;;) {
    const next = await Promise.race([reader.read(), deadline]);
    if (next === 'open') {
      await reader.cancel();
      return false;
    }
    if (next.done) return true;
  }
}

/** Signs in to `target`; the proxy in front of it adds `clientAddress` after what the client itself claimed. */
const signIn = (email: string, password: string, clientAddress: string, target = server, forwardedFor = `198.51.100.77, ${clientAddress}`) =>
  signInWithPassword(target, email, password, { 'X-Forwarded-For': forwardedFor });

describe('the data folder', () => {
  it('is created private: folder 0700, database and secret 0600 (on SQLite)', () => {
    const mode = (file: string) => fs.statSync(file).mode & 0o777;
    const folder = path.join(dataRoot, 'fresh');
    expect(mode(folder)).toBe(0o700);
    if (testDatabase === 'postgres') {
      // The tasks and the generated secret live in PostgreSQL: neither a SQLite file nor a secret file is made.
      expect(fs.existsSync(path.join(folder, 'app.db'))).toBe(false);
      expect(fs.existsSync(path.join(folder, 'secret'))).toBe(false);
    } else {
      expect(mode(path.join(folder, 'secret'))).toBe(0o600);
      expect(mode(path.join(folder, 'app.db'))).toBe(0o600);
      expect(mode(path.join(folder, 'app.db-wal'))).toBe(0o600);
    }
  });
});

/**
 * Posts to NextAuth's credentials callback in a shape of the caller's choosing, with a valid CSRF token,
 * from `clientAddress` (behind the trusted proxy).
 */
async function postCredentials(input: { path: string; contentType: string; body: (csrfToken: string) => string; clientAddress: string }) {
  const csrf = await fetch(`${server.url}/api/auth/csrf`);
  const { csrfToken } = (await csrf.json()) as { csrfToken: string };
  const response = await fetch(`${server.url}${input.path}`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'Content-Type': input.contentType, Cookie: cookieHeader(csrf), 'X-Forwarded-For': input.clientAddress },
    body: input.body(csrfToken),
  });
  const sessionCookie = response.headers.getSetCookie().find((cookie) => cookie.startsWith('next-auth.session-token='));
  return { response, sessionCookie };
}

const form = 'application/x-www-form-urlencoded';
const requestShapes: Array<[string, (email: string, password: string, attempt: number) => Omit<Parameters<typeof postCredentials>[0], 'clientAddress'>]> = [
  [
    'a JSON body',
    (email, password) => ({
      path: '/api/auth/callback/credentials',
      contentType: 'application/json',
      body: (csrfToken) => JSON.stringify({ csrfToken, email, password, json: 'true' }),
    }),
  ],
  [
    'a JSON body that asks for a redirect',
    (email, password) => ({
      path: '/api/auth/callback/credentials',
      contentType: 'application/json',
      body: (csrfToken) => JSON.stringify({ csrfToken, email, password }),
    }),
  ],
  [
    'a path below the credentials callback',
    (email, password) => ({
      path: '/api/auth/callback/credentials/x',
      contentType: form,
      body: (csrfToken) => new URLSearchParams({ csrfToken, email, password, json: 'true' }).toString(),
    }),
  ],
  [
    'the email field twice, a decoy first',
    (email, password, attempt) => ({
      path: '/api/auth/callback/credentials',
      contentType: form,
      body: (csrfToken) =>
        new URLSearchParams([['csrfToken', csrfToken], ['email', `decoy-${attempt}@example.com`], ['email', email], ['password', password], ['json', 'true']]).toString(),
    }),
  ],
];

describe('sign-in throttling', () => {
  it.each(requestShapes.map(([label, shape], index) => [label, shape, index] as const))(
    'counts attempts sent as %s against the account NextAuth signs in to',
    async (_label, shape, index) => {
      const email = `shaped-${index}@example.com`;
      const clientAddress = `203.0.113.${50 + index}`;
      makeUser(email, 'the right password');
      for (let attempt = 1; attempt <= 3; attempt += 1) {
        const { response, sessionCookie } = await postCredentials({ ...shape(email, `wrong password ${attempt}`, attempt), clientAddress });
        expect([401, 302]).toContain(response.status);
        expect(sessionCookie).toBeUndefined();
      }
      const shaped = await postCredentials({ ...shape(email, 'the right password', 4), clientAddress });
      expect(shaped.response.status).toBe(429);
      expect(Number(shaped.response.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(shaped.sessionCookie).toBeUndefined();
      expect((await signIn(email, 'the right password', clientAddress)).response.status).toBe(429);
    },
  );

  it('answers 429 with Retry-After after too many attempts on one account from one address, even with the right password', async () => {
    makeUser('throttled@example.com', 'the right password');
    for (let attempt = 1; attempt <= 3; attempt += 1) {
      const { response, sessionCookie } = await signIn('throttled@example.com', `wrong password ${attempt}`, '203.0.113.1');
      expect(response.status).not.toBe(429);
      expect(sessionCookie).toBeUndefined();
    }
    const { response, sessionCookie } = await signIn('throttled@example.com', 'the right password', '203.0.113.1');
    expect(response.status).toBe(429);
    expect(sessionCookie).toBeUndefined();
    const retryAfter = Number(response.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThan(0);
    expect(retryAfter).toBeLessThanOrEqual(15 * 60);
    const body = (await response.json()) as { url: string; message: string };
    expect(new URL(body.url).searchParams.get('error')).toBe(`TooManyAttempts:${retryAfter}`);
    expect(body.message).toBe(`Too many attempts, try again in ${retryAfter} s.`);
  });

  it('lets the owner in from their own address while another address is refused for guessing', async () => {
    makeUser('besieged@example.com', 'the right password');
    for (let attempt = 1; attempt <= 3; attempt += 1) await signIn('besieged@example.com', `guess ${attempt}`, '203.0.113.30');
    expect((await signIn('besieged@example.com', 'the right password', '203.0.113.30')).response.status).toBe(429);
    const owner = await signIn('besieged@example.com', 'the right password', '203.0.113.31');
    expect(owner.response.status).toBe(200);
    expect(owner.sessionCookie).toBeDefined();
  });

  it('refuses an account guessed at from many addresses once their attempts reach the higher ceiling', async () => {
    makeUser('distributed@example.com', 'the right password');
    for (let address = 1; address <= 3; address += 1) {
      for (let attempt = 1; attempt <= 2; attempt += 1) {
        expect((await signIn('distributed@example.com', `guess ${attempt}`, `203.0.113.${40 + address}`)).response.status).toBe(401);
      }
    }
    const refused = await signIn('distributed@example.com', 'the right password', '203.0.113.44');
    expect(refused.response.status).toBe(429);
    expect(refused.sessionCookie).toBeUndefined();
  });

  it('clears an account’s count when its owner signs in', async () => {
    makeUser('forgetful@example.com', 'the right password');
    for (let round = 0; round < 2; round += 1) {
      await signIn('forgetful@example.com', 'wrong', `192.0.2.${round * 3 + 1}`);
      await signIn('forgetful@example.com', 'wrong', `192.0.2.${round * 3 + 2}`);
      const { response, sessionCookie } = await signIn('forgetful@example.com', 'the right password', `192.0.2.${round * 3 + 3}`);
      expect(response.status).toBe(200);
      expect(sessionCookie).toBeDefined();
    }
  });

  it('answers 429 after too many attempts from one address, whichever accounts they name', async () => {
    for (let attempt = 1; attempt <= 5; attempt += 1) {
      expect((await signIn(`nobody-${attempt}@example.com`, 'whatever', '203.0.113.200')).response.status).not.toBe(429);
    }
    const refused = await signIn('nobody-6@example.com', 'whatever', '203.0.113.200');
    expect(refused.response.status).toBe(429);
    expect(Number(refused.response.headers.get('retry-after'))).toBeGreaterThan(0);
    // The left-most entry is the client's own claim; only the proxy's entry counts.
    expect((await signIn('nobody-7@example.com', 'whatever', '203.0.113.201')).response.status).not.toBe(429);
  });
});

// Only npm start's server replaces what the client wrote; next start keeps it (README: behind a proxy).
// So this suite runs npm start's server on both passes.
describe('sign-in throttling without a trusted proxy', () => {
  let direct: TestServer;
  beforeAll(async () => {
    direct = await startServer({ SIGNIN_MAX_PER_IP: '2' }, 'production-server');
  });
  afterAll(async () => {
    await direct?.stop();
  });

  it('counts the socket address, whatever X-Forwarded-For the client writes', async () => {
    const attempt = async (index: number) => (await signIn(`spoofer-${index}@example.com`, 'whatever', '', direct, `203.0.113.${index}`)).response.status;
    expect(await attempt(1)).not.toBe(429);
    expect(await attempt(2)).not.toBe(429);
    expect(await attempt(3)).toBe(429);
  });
});

describe('ending sessions', () => {
  it('a new password from user:password ends every session signed in before it', async () => {
    makeUser('rotate@example.com', 'the first password');
    const first = await signIn('rotate@example.com', 'the first password', '198.51.100.10');
    const second = await signIn('rotate@example.com', 'the first password', '198.51.100.11');
    expect(first.sessionCookie && second.sessionCookie).toBeTruthy();
    const tasksPage = (cookie: string) => fetch(`${server.url}/tasks`, { redirect: 'manual', headers: { Cookie: cookie } });
    expect((await tasksPage(first.sessionCookie!)).status).toBe(200);
    const live = (await (await fetch(`${server.url}/api/auth/session`, { headers: { Cookie: first.sessionCookie! } })).json()) as { user?: { email?: string } };
    expect(live.user?.email).toBe('rotate@example.com');

    setPassword('rotate@example.com', 'the second password');
    for (const cookie of [first.sessionCookie!, second.sessionCookie!]) {
      const page = await tasksPage(cookie);
      expect(page.status).toBe(307);
      expect(page.headers.get('location')).toMatch(/\/signin\?callbackUrl=%2Ftasks&reason=expired$/);
      expect((await fetch(`${server.url}/api/tasks/events`, { headers: { Cookie: cookie } })).status).toBe(401);
      const session = (await (await fetch(`${server.url}/api/auth/session`, { headers: { Cookie: cookie } })).json()) as { user?: unknown };
      expect(session.user).toBeUndefined();
    }
    expect((await signIn('rotate@example.com', 'the first password', '198.51.100.12')).sessionCookie).toBeUndefined();
    const fresh = await signIn('rotate@example.com', 'the second password', '198.51.100.13');
    expect((await tasksPage(fresh.sessionCookie!)).status).toBe(200);
  });
});

describe('signing out everywhere', () => {
  it('ends the open dashboard event stream of every signed-out browser', async () => {
    makeUser('watching@example.com', 'the password');
    const watching = await signIn('watching@example.com', 'the password', '198.51.100.20');
    const other = await signIn('watching@example.com', 'the password', '198.51.100.21');
    const events = await fetch(`${server.url}/api/tasks/events`, { headers: { Cookie: watching.sessionCookie! } });
    expect(events.status).toBe(200);

    const reply = await signOutEverywhere(other.sessionCookie!, false);
    expect(reply.status).toBe(200);
    expect(reply.text).toContain('"ok":true');
    // Generous: the stream must end by itself, long before anything else would end it.
    expect(await endsWithin(events, 30_000)).toBe(true);
  });

  it('keeps personal access tokens unless asked, and then revokes them at once', async () => {
    const token = makeUser('everything@example.com', 'the password');
    const first = await signIn('everything@example.com', 'the password', '198.51.100.22');
    expect((await signOutEverywhere(first.sessionCookie!, false)).text).toContain('"ok":true');
    expect(await bearerAccepted(token)).toBe(true);

    const second = await signIn('everything@example.com', 'the password', '198.51.100.23');
    expect((await signOutEverywhere(second.sessionCookie!, true)).text).toContain('"ok":true');
    expect(await bearerAccepted(token)).toBe(false);
    expect((await fetch(`${server.url}/api/tasks/events`, { headers: { Cookie: second.sessionCookie! } })).status).toBe(401);
  });

  it('a new password from user:password keeps tokens unless --end-tokens-and-apps is given, and says which', async () => {
    const token = makeUser('new-password@example.com', 'the first password');
    expect(setPassword('new-password@example.com', 'the second password')).toMatch(/tokens and connected apps still work: add --end-tokens-and-apps/);
    expect(await bearerAccepted(token)).toBe(true);
    expect(setPassword('new-password@example.com', 'the third password', ['--end-tokens-and-apps'])).toMatch(/tokens are revoked and their connected apps disconnected/);
    expect(await bearerAccepted(token)).toBe(false);
  });
});

describe('an account taken back with GitHub or Google', () => {
  it('says on every page what went with the password someone else set, until the person has read it', async () => {
    makeUser('reclaimed@example.com', 'the password');
    const { sessionCookie } = await signIn('reclaimed@example.com', 'the password', '198.51.100.30');
    const notice = 'Someone had signed up with your address, and a password of theirs, before you signed in with GitHub or Google.';
    const page = async (path: string) => (await fetch(`${server.url}${path}`, { headers: { Cookie: sessionCookie! } })).text();
    expect(await page('/tasks')).not.toContain(notice);
    // What the provider's sign-in records as it removes that password (tests/unit/auth-options.test.ts).
    server.db().prepare('UPDATE users SET reclaimed_at = ? WHERE email = ?').run(Date.now(), 'reclaimed@example.com');
    for (const path of ['/tasks', '/notifications']) {
      const shown = await page(path);
      expect(shown).toContain(notice);
      expect(shown).toContain('every webhook, subscribed browser and e-mail notification of this account');
    }
    const dismiss = (cookie: string) => callServerAction(server, { page: '/tasks', filename: 'app/(auth)/actions.ts', exportedName: 'dismissReclaimedNoticeAction', body: '[]', cookie });
    // Signed out, nothing is dismissed.
    expect((await dismiss('')).text).not.toContain('"ok":true');
    expect(await page('/tasks')).toContain(notice);
    expect((await dismiss(sessionCookie!)).text).toContain('"ok":true');
    expect(await page('/tasks')).not.toContain(notice);
  });
});

describe('sign-up', () => {
  const signUpForm = (email: string) => {
    const body = new FormData();
    body.set('_1_email', email);
    body.set('_1_password', 'a long enough password');
    body.set('0', JSON.stringify([{ ok: false, errors: {} }, '$K1']));
    return body;
  };
  const replaySignUp = (target: TestServer, email: string) =>
    callServerAction(target, { page: '/signup', filename: 'app/(auth)/actions.ts', exportedName: 'signUpAction', body: signUpForm(email) });
  const usersWithEmail = (target: TestServer, email: string) =>
    (target.db().prepare('SELECT count(*) AS n FROM users WHERE email = ?').get(email) as { n: number }).n;

  it('creates no account when its action is replayed by hand while ALLOW_SIGNUP=false', async () => {
    // The same request creates an account while sign-up is open: the replay is what the form sends.
    expect((await replaySignUp(server, 'replayed@example.com')).status).toBe(200);
    expect(usersWithEmail(server, 'replayed@example.com')).toBe(1);

    const closed = await startServer({ ALLOW_SIGNUP: 'false' });
    try {
      const reply = await replaySignUp(closed, 'replayed@example.com');
      expect(reply.status).toBe(200);
      expect(reply.text).toContain('Sign-up is closed on this server');
      expect(usersWithEmail(closed, 'replayed@example.com')).toBe(0);
    } finally {
      await closed.stop();
    }
  });
});

describe('starting on a public address', () => {
  it('refuses plain http on a non-loopback HOST and says why', () => {
    const result = spawnSync(process.execPath, ['scripts/start.mjs'], {
      cwd: root,
      env: { ...process.env, HOST: '0.0.0.0', PORT: '1', APP_URL: '', DATABASE_PATH: path.join(dataRoot, 'refused', 'app.db') },
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(result.status).toBe(1);
    expect(result.stderr).toMatch(/APP_URL: must be an https URL when HOST is not a loopback address/);
    expect(result.stderr).toMatch(/Secure flag/);
    expect(result.stderr).toMatch(/ALLOW_INSECURE_HTTP=true/);
    expect(fs.existsSync(path.join(dataRoot, 'refused'))).toBe(false);
  });
});
