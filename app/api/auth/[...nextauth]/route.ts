import NextAuth from 'next-auth';
import { getAuthOptions } from '@/lib/auth/options';
import { answerThrottledSignIn } from '@/lib/auth/throttle';

export const runtime = 'nodejs';
export const dynamic = 'force-dynamic';

type RouteContext = { params: Promise<{ nextauth: string[] }> };

const handle = (request: Request, context: RouteContext) => NextAuth(getAuthOptions())(request, context);

/** NextAuth itself cannot answer 429: a sign-in the throttle refused is given its status here. */
async function handlePost(request: Request, context: RouteContext) {
  return answerThrottledSignIn(await handle(request, context));
}

export { handle as GET, handlePost as POST };
