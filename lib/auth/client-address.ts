import type { IncomingMessage } from 'node:http';
import ipaddr from 'ipaddr.js';

/**
 * The address a request came from, as the throttles see it: the right-most X-Forwarded-For entry, which
 * is the one added by whoever connected to us. Next fills the header from the socket only when a request
 * arrives without one, so the server must call `normaliseForwardedFor` on every request first.
 */
export function clientAddress(headers: Headers): string {
  const entries = (headers.get('x-forwarded-for') ?? '')
    .split(',')
    .map((entry) => entry.trim())
    .filter(Boolean);
  return entries.at(-1) ?? 'unknown';
}

/**
 * Makes X-Forwarded-For trustworthy before Next sees the request. Without a trusted proxy (TRUST_PROXY
 * unset), anything the client wrote is replaced by the socket's address, so nobody can pick the address
 * they are throttled under. Behind a trusted proxy its header is kept, and its last entry is the client.
 */
export function normaliseForwardedFor(request: IncomingMessage, trustProxy: boolean): void {
  if (trustProxy && request.headers['x-forwarded-for']) return;
  const socketAddress = request.socket.remoteAddress;
  if (socketAddress) request.headers['x-forwarded-for'] = socketAddress;
  else delete request.headers['x-forwarded-for'];
}

/** Whether an address (as `clientAddress` gives it) is this machine's own. */
export function isLoopbackAddress(address: string): boolean {
  if (!ipaddr.isValid(address)) return false;
  return ipaddr.process(address).range() === 'loopback';
}
