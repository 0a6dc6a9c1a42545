import { clientAddress, isLoopbackAddress } from '@/lib/auth/client-address';
import { storageHealth } from '@/lib/storage/health';
import { storageTroubleState } from '@/lib/storage/trouble';

export const runtime = 'nodejs';
export const dynamic = 'force-dynamic';

/**
 * For load balancers and people: 200 while the database takes writes, 503 (with the reason) while it
 * does not. No sign-in, and nothing private in it: the free space on the database's disk, which tells
 * how much is being stored, is given exactly only to a caller on this machine; others learn whether it
 * is low.
 */
export async function GET(request: Request): Promise<Response> {
  const { freeMiB, ...report } = await storageHealth().report();
  const storage = freeMiB !== undefined && isLoopbackAddress(clientAddress(request.headers)) ? { ...report, freeMiB } : report;
  return Response.json(
    { status: report.writable ? 'ok' : 'degraded', ...(report.trouble ? { message: storageTroubleState(report.trouble) } : {}), storage },
    { status: report.writable ? 200 : 503, headers: { 'Cache-Control': 'no-store' } },
  );
}
