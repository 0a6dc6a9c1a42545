import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { clientAddress, normaliseForwardedFor } from '@/lib/auth/client-address';

let server: http.Server | undefined;
afterEach(() => new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve())));

/** A real loopback server that reports the address the throttles would see for each request. */
async function addressSeen(trustProxy: boolean, forwardedFor?: string): Promise<string> {
  server = http.createServer((request, response) => {
    normaliseForwardedFor(request, trustProxy);
    const headers = new Headers();
    if (typeof request.headers['x-forwarded-for'] === 'string') headers.set('x-forwarded-for', request.headers['x-forwarded-for']);
    response.end(clientAddress(headers));
  });
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const response = await fetch(`http://127.0.0.1:${port}/`, { headers: forwardedFor ? { 'x-forwarded-for': forwardedFor } : {} });
  return response.text();
}

describe('the client address', () => {
  it('is the socket address when no proxy is trusted, whatever the client claims', async () => {
    expect(await addressSeen(false)).toBe('127.0.0.1');
    expect(await addressSeen(false, '203.0.113.9')).toBe('127.0.0.1');
  });

  it('is the entry the trusted proxy added, not the ones the client sent it', async () => {
    expect(await addressSeen(true, '198.51.100.1, 203.0.113.9')).toBe('203.0.113.9');
    expect(await addressSeen(true)).toBe('127.0.0.1');
  });
});
