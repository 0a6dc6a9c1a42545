import { getCurrentUser } from '@/lib/auth/session';
import { SseStream } from '@/lib/mcp/sse';
import { getRuntime } from '@/lib/runtime';
import { ownerOf, topics } from '@/lib/tasks/bus';

export const runtime = 'nodejs';
export const dynamic = 'force-dynamic';

/** The signed-in user's task changes, as server-sent events that tell the dashboard to refresh. */
export async function GET(request: Request) {
  const user = await getCurrentUser();
  if (!user) return Response.json({ error: 'Sign in to watch tasks.' }, { status: 401 });
  const stream = new SseStream();
  const unsubscribe = getRuntime().engine.bus.subscribe(topics.user(user.id), (event) => {
    if (event.type === 'session-message') return;
    stream.send({ type: event.type, taskId: ownerOf(event).taskId });
  });
  stream.signal.addEventListener('abort', unsubscribe, { once: true });
  request.signal.addEventListener('abort', () => stream.close(), { once: true });
  stream.send({ type: 'ready' });
  return stream.response();
}
