import { handleMcp } from '@/lib/mcp/handler';
import { getRuntime } from '@/lib/runtime';

export const runtime = 'nodejs';
export const dynamic = 'force-dynamic';

const handle = (request: Request) => handleMcp(request, getRuntime().mcp);

export { handle as GET, handle as POST, handle as DELETE };
