import { getCurrentUser, whenSessionsEnd } from '@/lib/auth/session';
import { getEnv } from '@/lib/env';
import { capRetryAfterMs, takeStreamPlace } from '@/lib/mcp/http/caps';
import { SseStream } from '@/lib/mcp/http/sse';
import { getRuntime } from '@/lib/runtime';
import { ownerOf, topics } from '@/lib/tasks/bus';

export const runtime = 'nodejs';
export const dynamic = 'force-dynamic';

/** The signed-in user's task changes, as server-sent events that tell the dashboard to refresh. */
export async function GET(request: Request) {
  const user = await getCurrentUser();
  if (!user) return Response.json({ error: 'Sign in to watch tasks.' }, { status: 401 });
  const limit = getEnv().DASHBOARD_MAX_STREAMS_PER_USER;
  const place = await takeStreamPlace('dashboard', user.id, limit);
  if (!place) {
    const retryAfterSeconds = Math.ceil(capRetryAfterMs / 1000);
    return Response.json(
      { error: `Too many live views: ${limit} are open for this account, the most DASHBOARD_MAX_STREAMS_PER_USER allows. Close a tab, or retry after ${retryAfterSeconds} seconds.` },
      { status: 429, headers: { 'Retry-After': String(retryAfterSeconds) } },
    );
  }
  const stream = new SseStream();
  place.holdUntilEnd(stream);
  const unsubscribe = getRuntime().engine.bus.subscribe(topics.user(user.id), (event) => {
    if (event.type === 'session-message' || event.type === 'leases-released') return;
    // Missed events: the page reads everything again.
    if (event.type === 'resync') stream.send({ type: 'resync' });
    else stream.send({ type: event.type, taskId: ownerOf(event).taskId });
  });
  stream.onClose(unsubscribe);
  whenSessionsEnd(user, stream.signal, () => stream.close());
  request.signal.addEventListener('abort', () => stream.close(), { once: true });
  stream.send({ type: 'ready' });
  return stream.response();
}
