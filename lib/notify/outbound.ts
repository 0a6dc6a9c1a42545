import dns from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import ipaddr from 'ipaddr.js';

/**
 * Requests this server makes to addresses people give it (webhooks): never to a private, loopback,
 * link-local or otherwise special address unless the host is allowed by the operator, checked on the
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

function refusal(host: string, address: string): RefusedAddressError {
  return new RefusedAddressError(
    `${host} is ${address === host ? 'a' : `at ${address}, a`} private, loopback or link-local address; deliveries go only to public addresses unless the operator allows the host (NOTIFY_PRIVATE_HOSTS)`,
  );
}

/** A resolver that answers only with public addresses, or fails the connection. */
function publicOnlyLookup(host: string): net.LookupFunction {
  return (hostname, options, callback) => {
    dns.lookup(hostname, { ...options, all: true }, (error, addresses) => {
      if (error) return (callback as (error: Error) => void)(error);
      const list = addresses as dns.LookupAddress[];
      const refused = list.find((entry) => !isPublicAddress(entry.address));
      if (refused || list.length === 0) return (callback as (error: Error) => void)(refused ? refusal(host, refused.address) : new Error(`${host} has no address`));
      if ((options as dns.LookupAllOptions).all) return (callback as (error: null, addresses: dns.LookupAddress[]) => void)(null, list);
      (callback as (error: null, address: string, family: number) => void)(null, list[0].address, list[0].family);
    });
  };
}

export interface OutboundResponse {
  status: number;
  /** The start of the body, as text. */
  body: string;
}

/**
 * POSTs `body` to `url`. Rejects with a RefusedAddressError for an address it may not reach, and with an
 * Error saying what happened for a timeout or a broken connection; any HTTP status resolves.
 */
export function postOutbound(
  url: string,
  body: string | Buffer,
  headers: Record<string, string>,
  options: { timeoutMs: number; privateHosts: readonly string[] },
): Promise<OutboundResponse> {
  const target = new URL(url);
  const host = bareHost(target.hostname);
  const allowPrivate = options.privateHosts.includes(host);
  if (!allowPrivate && net.isIP(host) && !isPublicAddress(host)) return Promise.reject(refusal(host, host));
  const send = target.protocol === 'https:' ? https.request : http.request;
  return new Promise((resolve, reject) => {
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
          if (size <= maxResponseBytes) chunks.push(chunk);
          else response.destroy();
        });
        const done = () => {
          clearTimeout(timer);
          resolve({ status: response.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') });
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
}
