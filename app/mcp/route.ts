import { fromWebRequest, toWebResponse } from '@/lib/mcp/http/exchange';
import { observeMcp } from '@/lib/mcp/http/observe';
import { getRuntime } from '@/lib/runtime';

export const runtime = 'nodejs';
export const dynamic = 'force-dynamic';

const handle = async (request: Request) => toWebResponse(await observeMcp(fromWebRequest(request), getRuntime().mcp));

// PUT and PATCH are answered too, so that they get the endpoint's 405 with a reason, not an empty one.
export { handle as GET, handle as POST, handle as DELETE, handle as PUT, handle as PATCH };
