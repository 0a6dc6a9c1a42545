import dns from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import ipaddr from 'ipaddr.js';
import type { PrivateHost } from '@/lib/env';

/**
 * Requests this server makes to addresses people give it (webhooks): never to a private, loopback,
 * link-local or otherwise special address unless the operator allows the host (and port), checked on the
 * address the connection is actually made to (the resolver's answer the socket uses), with bounded time
 * and response size, and no redirects followed.
 */

/** A response body read at most this far; the delivery log keeps less. */
const maxResponseBytes = 64 * 1024;

export class RefusedAddressError extends Error {
  override name = 'RefusedAddressError';
}

/** Globally routable unicast: not private, loopback, link-local, multicast, reserved, or a mapping of one. */
export function isPublicAddress(address: string): boolean {
  if (!ipaddr.isValid(address)) return false;
  let parsed = ipaddr.parse(address);
  if (parsed.kind() === 'ipv6' && (parsed as ipaddr.IPv6).isIPv4MappedAddress()) parsed = (parsed as ipaddr.IPv6).toIPv4Address();
  return parsed.range() === 'unicast';
}

/** The host as the allow list names it: lower case, IPv6 without brackets, no trailing dot. */
export function bareHost(hostname: string): string {
  return hostname.toLowerCase().replace(/^\[|\]$/g, '').replace(/\.$/, '');
}

/** The port a URL's connection is made to. */
function portOf(url: URL): number {
  if (url.port) return Number(url.port);
  return url.protocol === 'https:' ? 443 : 80;
}

/** Whether the operator allows deliveries to this URL's host (and port) on private addresses. */
export function allowsPrivate(privateHosts: readonly PrivateHost[], url: URL): boolean {
  const host = bareHost(url.hostname);
  const port = portOf(url);
  return privateHosts.some((allowed) => allowed.host === host && (allowed.port === undefined || allowed.port === port));
}

/** What a person is told: not the address a name led to, which the server's log keeps for the operator. */
function refusal(host: string): RefusedAddressError {
  return new RefusedAddressError(
    `${host} is not a public address: deliveries go only to public addresses, unless the operator allows the host (NOTIFY_PRIVATE_HOSTS)`,
  );
}

/**
 * Whether the socket may use the resolver's answer: only when every address in it is public (one private
 * address among public ones is enough to refuse, since the socket may pick any of them). Names the address
 * refused, for the server's log.
 */
export function checkResolved(addresses: readonly dns.LookupAddress[]): { ok: true } | { ok: false; refused: string | null } {
  if (addresses.length === 0) return { ok: false, refused: null };
  const refused = addresses.find((entry) => !isPublicAddress(entry.address));
  return refused ? { ok: false, refused: refused.address } : { ok: true };
}

type Resolve = (hostname: string, options: dns.LookupAllOptions, callback: (error: NodeJS.ErrnoException | null, addresses: dns.LookupAddress[]) => void) => void;

/** A `lookup` for the socket that answers only with public addresses, or fails the connection. */
export function publicOnlyLookup(host: string, resolve: Resolve = dns.lookup): net.LookupFunction {
  return (hostname, options, callback) => {
    resolve(hostname, { ...options, all: true }, (error, addresses) => {
      if (error) return (callback as (error: Error) => void)(error);
      const checked = checkResolved(addresses);
      if (!checked.ok) {
        if (checked.refused === null) return (callback as (error: Error) => void)(new Error(`${host} has no address`));
        console.warn(`Refused a delivery to ${host}: it resolves to ${checked.refused}, not a public address`);
        return (callback as (error: Error) => void)(refusal(host));
      }
      if ((options as dns.LookupAllOptions).all) return (callback as (error: null, addresses: dns.LookupAddress[]) => void)(null, addresses);
      (callback as (error: null, address: string, family: number) => void)(null, addresses[0].address, addresses[0].family);
    });
  };
}

export interface OutboundResponse {
  status: number;
  /** The start of the body, as text; null from a host on the operator's private list, whose answers are not shown. */
  body: string | null;
}

/**
 * POSTs `body` to `url`. Rejects with a RefusedAddressError for an address it may not reach, and with an
 * Error saying what happened for a timeout or a broken connection; any HTTP status resolves. A host the
 * operator allows on a private address (NOTIFY_PRIVATE_HOSTS) is reachable by every signed-in person, so
 * what it answers beyond its status, and why a connection to it failed, goes to the server's log only.
 */
export function postOutbound(
  url: string,
  body: string | Buffer,
  headers: Record<string, string>,
  options: { timeoutMs: number; privateHosts: readonly PrivateHost[] },
): Promise<OutboundResponse> {
  const target = new URL(url);
  const host = bareHost(target.hostname);
  const allowPrivate = allowsPrivate(options.privateHosts, target);
  if (!allowPrivate && net.isIP(host) && !isPublicAddress(host)) return Promise.reject(refusal(host));
  const send = target.protocol === 'https:' ? https.request : http.request;
  const sent = new Promise<OutboundResponse>((resolve, reject) => {
    const request = send(
      target,
      {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'user-agent': 'mcp-task-server-webhooks', ...headers, 'content-length': Buffer.byteLength(body) },
        agent: false,
        ...(allowPrivate ? {} : { lookup: publicOnlyLookup(host) }),
      },
      (response) => {
        const chunks: Buffer[] = [];
        let size = 0;
        response.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size <= maxResponseBytes && !allowPrivate) chunks.push(chunk);
          else if (size > maxResponseBytes) response.destroy();
        });
        const done = () => {
          clearTimeout(timer);
          resolve({ status: response.statusCode ?? 0, body: allowPrivate ? null : Buffer.concat(chunks).toString('utf8') });
        };
        response.on('end', done);
        response.on('close', done);
      },
    );
    const timer = setTimeout(() => request.destroy(new Error(`no response within ${options.timeoutMs} ms`)), options.timeoutMs);
    request.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    request.end(body);
  });
  if (!allowPrivate) return sent;
  return sent.catch((error: unknown) => {
    console.warn(`Delivery to ${target.origin} (allowed by NOTIFY_PRIVATE_HOSTS) failed: ${error instanceof Error ? error.message : String(error)}`);
    throw new Error('no answer (why is in the server log: the host is on the operator’s private list)');
  });
}
