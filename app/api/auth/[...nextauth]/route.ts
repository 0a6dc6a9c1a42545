import NextAuth from 'next-auth';
import { getAuthOptions } from '@/lib/auth/options';

export const runtime = 'nodejs';
export const dynamic = 'force-dynamic';

type RouteContext = { params: Promise<{ nextauth: string[] }> };

const handle = (request: Request, context: RouteContext) => NextAuth(getAuthOptions())(request, context);

export { handle as GET, handle as POST };
