import { storageHealth } from '@/lib/storage/health';
import { storageTroubleState } from '@/lib/storage/trouble';

export const runtime = 'nodejs';
export const dynamic = 'force-dynamic';

/**
 * For load balancers and people: 200 while the database takes writes, 503 (with the reason) while it
 * does not. No sign-in, and nothing private in it.
 */
export async function GET(): Promise<Response> {
  const report = await storageHealth().report();
  return Response.json(
    { status: report.writable ? 'ok' : 'degraded', ...(report.trouble ? { message: storageTroubleState(report.trouble) } : {}), storage: report },
    { status: report.writable ? 200 : 503, headers: { 'Cache-Control': 'no-store' } },
  );
}
