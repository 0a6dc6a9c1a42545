import { observeMcp } from '@/lib/mcp/observe';
import { getRuntime } from '@/lib/runtime';

export const runtime = 'nodejs';
export const dynamic = 'force-dynamic';

const handle = (request: Request) => observeMcp(request, getRuntime().mcp);

export { handle as GET, handle as POST, handle as DELETE };
