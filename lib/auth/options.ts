import type { NextAuthOptions } from 'next-auth';
import CredentialsProvider from 'next-auth/providers/credentials';
import GitHubProvider from 'next-auth/providers/github';
import GoogleProvider from 'next-auth/providers/google';
import { createUser, getUserByEmail } from '@/db/queries/users';
import { getServerSecret } from './secret';
import { verifyPassword } from './password';

const globalForAuth = globalThis as unknown as { __mcpTaskServerAuthOptions?: NextAuthOptions };

/**
 * NextAuth: email and password against the users table, plus GitHub and Google when their credentials
 * are configured. Sessions are signed JWTs whose `uid` is our user id.
 */
export function getAuthOptions(): NextAuthOptions {
  if (globalForAuth.__mcpTaskServerAuthOptions) return globalForAuth.__mcpTaskServerAuthOptions;
  const providers: NextAuthOptions['providers'] = [
    CredentialsProvider({
      name: 'Email and password',
      credentials: { email: { label: 'Email', type: 'email' }, password: { label: 'Password', type: 'password' } },
      async authorize(credentials) {
        const email = credentials?.email?.trim().toLowerCase();
        const password = credentials?.password;
        if (!email || !password) return null;
        const user = getUserByEmail(email);
        if (!user || !(await verifyPassword(password, user.passwordHash))) return null;
        return { id: user.id, email: user.email, name: user.name };
      },
    }),
  ];
  if (process.env.GITHUB_ID && process.env.GITHUB_SECRET) {
    providers.push(GitHubProvider({ clientId: process.env.GITHUB_ID, clientSecret: process.env.GITHUB_SECRET }));
  }
  if (process.env.GOOGLE_CLIENT_ID && process.env.GOOGLE_CLIENT_SECRET) {
    providers.push(GoogleProvider({ clientId: process.env.GOOGLE_CLIENT_ID, clientSecret: process.env.GOOGLE_CLIENT_SECRET }));
  }
  const options: NextAuthOptions = {
    providers,
    secret: getServerSecret(),
    session: { strategy: 'jwt', maxAge: 30 * 24 * 60 * 60 },
    pages: { signIn: '/signin', error: '/signin' },
    callbacks: {
      async signIn({ user, account }) {
        if (account?.provider === 'credentials') return true;
        // An OAuth sign-in joins the account with the same (provider-verified) email, or creates one.
        return Boolean(user.email);
      },
      async jwt({ token, user, account }) {
        if (user && account) {
          const email = user.email!.toLowerCase();
          const local = account.provider === 'credentials' ? { id: user.id } : (getUserByEmail(email) ?? createUser({ email, name: user.name }));
          token.uid = local.id;
        }
        return token;
      },
      async session({ session, token }) {
        if (session.user && typeof token.uid === 'string') (session.user as { id?: string }).id = token.uid;
        return session;
      },
    },
  };
  globalForAuth.__mcpTaskServerAuthOptions = options;
  return options;
}

/** The providers other than email and password, for the sign-in page's buttons. */
export function oauthProviders(): Array<{ id: string; name: string }> {
  return [
    ...(process.env.GITHUB_ID && process.env.GITHUB_SECRET ? [{ id: 'github', name: 'GitHub' }] : []),
    ...(process.env.GOOGLE_CLIENT_ID && process.env.GOOGLE_CLIENT_SECRET ? [{ id: 'google', name: 'Google' }] : []),
  ];
}
