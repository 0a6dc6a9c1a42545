import type { Account, NextAuthOptions, Profile } from 'next-auth';
import CredentialsProvider from 'next-auth/providers/credentials';
import GitHubProvider, { type GithubEmail, type GithubProfile } from 'next-auth/providers/github';
import GoogleProvider from 'next-auth/providers/google';
import {
  createUserWithLinkedAccount,
  getLinkedAccountByProviderAccountId,
  getUserByEmail,
  getUserById,
  insertLinkedAccount,
  setUserEmailVerified,
  upgradeUserPasswordHash,
} from '@/db/queries/users';
import { inTransaction } from '@/db/run';
import { getEnv } from '@/lib/env';
import { linkAccountByProvenEmail } from './accounts';
import { defaultCallbackPath, safeCallbackPath } from './callback-url';
import { getServerSecret } from './secret';
import { burnDummyHash, hashPassword, needsRehash, passwordRules, verifyPassword } from './password';
import { clientAddress } from './client-address';
import { forgetSignInAttempts, throttleSignIn } from './throttle';
import { tooManyAttemptsError } from './throttle-message';
import { storageTroubleOf } from '@/db/errors';

/** Why an OAuth sign-in was refused; the sign-in page explains each (`?error=`). */
export type OAuthRefusal = 'OAuthEmailNotVerified' | 'OAuthAccountLinkedElsewhere' | 'SignupClosed';

/** What a provider told us about the person, reduced to what joining an account depends on. */
export type OAuthIdentity = {
  provider: string;
  providerAccountId: string;
  email: string | null;
  emailVerified: boolean;
  name: string | null;
};

type GithubProfileWithEmails = GithubProfile & { verifiedPrimaryEmail?: string | null };

/**
 * Which user an OAuth sign-in is, creating or joining accounts as needed. A provider account already
 * linked signs in as its user. Otherwise it is linked to the person signed in right now, or to the
 * account with the same email, but only when the provider vouches for that email: an unverified one
 * could belong to anyone. New accounts are made only while sign-up is open. An address the provider
 * vouches for is proved, for the account that has it, as a confirmation link would prove it.
 */
export function resolveOAuthSignIn(
  identity: OAuthIdentity,
  context: { signedInUserId: string | null; allowSignup: boolean },
): Promise<{ ok: true; userId: string } | { ok: false; refusal: OAuthRefusal }> {
  const vouchedEmail = identity.email && identity.emailVerified ? identity.email.trim().toLowerCase() : null;
  // One transaction: the account cannot be linked by another sign-in between this one's read and write.
  return inTransaction(function* (q) {
    const signedInAs = function* (userId: string) {
      if (vouchedEmail) yield* setUserEmailVerified.program(q, userId, vouchedEmail);
      return { ok: true, userId } as const;
    };
    const linked = yield* getLinkedAccountByProviderAccountId.program(q, identity.provider, identity.providerAccountId);
    if (linked) {
      if (context.signedInUserId && context.signedInUserId !== linked.userId) return { ok: false, refusal: 'OAuthAccountLinkedElsewhere' } as const;
      return yield* signedInAs(linked.userId);
    }
    const account = { provider: identity.provider, providerAccountId: identity.providerAccountId };
    if (context.signedInUserId) {
      yield* insertLinkedAccount.program(q, { ...account, userId: context.signedInUserId });
      return yield* signedInAs(context.signedInUserId);
    }
    if (!vouchedEmail) return { ok: false, refusal: 'OAuthEmailNotVerified' } as const;
    const existing = yield* getUserByEmail.program(q, vouchedEmail);
    if (existing) {
      yield* linkAccountByProvenEmail.program(q, existing, account);
      return { ok: true, userId: existing.id } as const;
    }
    if (!context.allowSignup) return { ok: false, refusal: 'SignupClosed' } as const;
    const created = yield* createUserWithLinkedAccount.program(q, { email: vouchedEmail, name: identity.name, ...account });
    return yield* signedInAs(created.id);
  });
}

/** Reads the provider's own word on the email: GitHub's verified primary address, Google's `email_verified`. */
export function oauthIdentity(account: Account, profile: Profile | undefined, fallbackName?: string | null): OAuthIdentity {
  const base = { provider: account.provider, providerAccountId: String(account.providerAccountId), name: fallbackName ?? profile?.name ?? null };
  if (account.provider === 'github') {
    const email = (profile as GithubProfileWithEmails | undefined)?.verifiedPrimaryEmail ?? null;
    return { ...base, email, emailVerified: Boolean(email) };
  }
  if (account.provider === 'google') {
    const google = profile as { email?: unknown; email_verified?: unknown } | undefined;
    const email = typeof google?.email === 'string' ? google.email : null;
    return { ...base, email, emailVerified: google?.email_verified === true };
  }
  return { ...base, email: profile?.email ?? null, emailVerified: false };
}

/**
 * GitHub's profile email is whatever the person typed on their profile; only `/user/emails` says which
 * address is primary and verified, so the profile is read with that list.
 */
function githubProvider(clientId: string, clientSecret: string) {
  return GitHubProvider({
    clientId,
    clientSecret,
    userinfo: {
      url: 'https://api.github.com/user',
      async request({ client, tokens }) {
        const profile = (await client.userinfo(tokens.access_token!)) as unknown as GithubProfileWithEmails;
        const response = await fetch('https://api.github.com/user/emails', {
          headers: { Authorization: `token ${tokens.access_token}`, Accept: 'application/vnd.github+json' },
        });
        const emails: GithubEmail[] = response.ok ? await response.json() : [];
        profile.verifiedPrimaryEmail = emails.find((entry) => entry.primary && entry.verified)?.email ?? null;
        return profile as never;
      },
    },
    profile(profile: GithubProfileWithEmails) {
      return {
        id: String(profile.id),
        name: profile.name ?? profile.login,
        email: profile.verifiedPrimaryEmail ?? null,
        image: profile.avatar_url,
      };
    },
  });
}

type AuthDependencies = {
  /** The user signed in on this browser right now, if any: an OAuth sign-in then links to them. */
  signedInUserId(): Promise<string | null>;
};

/**
 * NextAuth: email and password against the users table, plus GitHub and Google when their credentials
 * are configured. Sessions are signed JWTs carrying our user id (`uid`) and the user's session
 * generation (`gen`), which the session callback compares on every read so that sessions can be ended.
 */
export function buildAuthOptions(dependencies: AuthDependencies): NextAuthOptions {
  const providers: NextAuthOptions['providers'] = [
    CredentialsProvider({
      name: 'Email and password',
      credentials: { email: { label: 'Email', type: 'email' }, password: { label: 'Password', type: 'password' } },
      async authorize(credentials, request) {
        const email = credentials?.email?.trim().toLowerCase();
        const password = credentials?.password;
        // Refused before any hashing, so an over-long password costs the server nothing.
        if (!email || !password || email.length > 254 || password.length > passwordRules.maxLength) return null;
        // Counted here, on the email NextAuth parsed, whatever shape the request had (form or JSON, any
        // path NextAuth routes here, a repeated field); the route turns the thrown refusal into a 429.
        const attempt = { address: clientAddress(new Headers(request?.headers ?? {})), email };
        const verdict = await throttleSignIn(attempt);
        if (!verdict.allowed) throw new Error(tooManyAttemptsError(verdict.retryAfterSeconds));
        const user = await getUserByEmail(email);
        if (!user) {
          await burnDummyHash(password);
          return null;
        }
        if (!(await verifyPassword(password, user.passwordHash))) return null;
        if (needsRehash(user.passwordHash)) await upgradeUserPasswordHash(user.id, user.passwordHash!, await hashPassword(password));
        await forgetSignInAttempts(attempt);
        return { id: user.id, email: user.email, name: user.name };
      },
    }),
  ];
  if (process.env.GITHUB_ID && process.env.GITHUB_SECRET) providers.push(githubProvider(process.env.GITHUB_ID, process.env.GITHUB_SECRET));
  if (process.env.GOOGLE_CLIENT_ID && process.env.GOOGLE_CLIENT_SECRET) {
    providers.push(GoogleProvider({ clientId: process.env.GOOGLE_CLIENT_ID, clientSecret: process.env.GOOGLE_CLIENT_SECRET }));
  }
  return {
    providers,
    secret: getServerSecret(),
    session: { strategy: 'jwt', maxAge: 30 * 24 * 60 * 60 },
    pages: { signIn: '/signin', error: '/signin' },
    callbacks: {
      async signIn({ user, account, profile }) {
        if (!account || account.provider === 'credentials') return true;
        const decision = await resolveOAuthSignIn(oauthIdentity(account, profile, user.name), {
          signedInUserId: await dependencies.signedInUserId(),
          allowSignup: getEnv().allowSignup,
        });
        return decision.ok ? true : `/signin?error=${decision.refusal}`;
      },
      async jwt({ token, user, account }) {
        if (user && account) {
          const userId =
            account.provider === 'credentials'
              ? user.id
              : (await getLinkedAccountByProviderAccountId(account.provider, String(account.providerAccountId)))?.userId;
          const local = userId ? await getUserById(userId) : undefined;
          if (!local) throw new Error('The signed-in account no longer exists.');
          token.uid = local.id;
          token.gen = local.sessionGeneration;
        }
        return token;
      },
      /**
       * Every session read (pages, actions, NextAuth's own /api/auth/session) passes here: a token signed
       * before the user's current session generation, or for a deleted user, is a session without a user.
       * A database that cannot be read is said as such (`storageTrouble`), not as a session without a user.
       */
      async session({ session, token }) {
        let user;
        try {
          user = typeof token.uid === 'string' ? await getUserById(token.uid) : undefined;
        } catch (error) {
          // NextAuth would swallow the error and call the person signed out: the trouble is passed on instead.
          const trouble = storageTroubleOf(error);
          if (!trouble) throw error;
          return { expires: session.expires, storageTrouble: trouble.kind };
        }
        const generation = typeof token.gen === 'number' ? token.gen : 0;
        if (!user || user.sessionGeneration !== generation) return { expires: session.expires };
        return { ...session, user: { ...session.user, id: user.id } };
      },
      async redirect({ url, baseUrl }) {
        return new URL(safeCallbackPath(url, baseUrl, defaultCallbackPath), baseUrl).toString();
      },
    },
  };
}

const globalForAuth = globalThis as unknown as { __mcpTaskServerAuthOptions?: NextAuthOptions };

export function getAuthOptions(): NextAuthOptions {
  // Loaded when a sign-in asks, not with these options: next/headers may only load inside Next's server,
  // and the production server reads these options (for the OAuth sign-in step) before Next has started.
  globalForAuth.__mcpTaskServerAuthOptions ??= buildAuthOptions({
    signedInUserId: async () => (await (await import('./session')).getCurrentUser())?.id ?? null,
  });
  return globalForAuth.__mcpTaskServerAuthOptions;
}

/** The providers other than email and password, for the sign-in page's buttons. */
export function oauthProviders(): Array<{ id: string; name: string }> {
  return [
    ...(process.env.GITHUB_ID && process.env.GITHUB_SECRET ? [{ id: 'github', name: 'GitHub' }] : []),
    ...(process.env.GOOGLE_CLIENT_ID && process.env.GOOGLE_CLIENT_SECRET ? [{ id: 'google', name: 'Google' }] : []),
  ];
}
