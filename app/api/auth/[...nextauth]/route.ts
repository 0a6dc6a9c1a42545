import NextAuth from 'next-auth';
import { getAuthOptions } from '@/lib/auth/options';
import { refuseThrottledSignIn } from '@/lib/auth/throttle';

export const runtime = 'nodejs';
export const dynamic = 'force-dynamic';

type RouteContext = { params: Promise<{ nextauth: string[] }> };

const handle = (request: Request, context: RouteContext) => NextAuth(getAuthOptions())(request, context);

/** Email-and-password sign-ins pass the throttle first: NextAuth itself cannot answer 429. */
async function handlePost(request: Request, context: RouteContext) {
  return (await refuseThrottledSignIn(request)) ?? handle(request, context);
}

export { handle as GET, handlePost as POST };
