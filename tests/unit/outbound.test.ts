import type dns from 'node:dns';
import { describe, expect, it, vi } from 'vitest';
import { parseEnv, parsePrivateHost } from '@/lib/env';
import { allowsPrivate, checkResolved, isPublicAddress, postOutbound, publicOnlyLookup, RefusedAddressError } from '@/lib/notify/outbound';

/**
 * The outbound address guard's decisions, without the network: which addresses count as public, what
 * the socket's lookup does with a resolver's answer (a stand-in resolver gives it), and which hosts and
 * ports the operator's NOTIFY_PRIVATE_HOSTS opens. No request here leaves this process.
 */

const publicAddresses = ['93.184.216.34', '8.8.8.8', '1.1.1.1', '2606:4700:4700::1111', '2a00:1450:4001:82b::200e', '::ffff:93.184.216.34'];
const specialAddresses = {
  private: ['10.0.0.1', '172.16.5.4', '172.31.255.255', '192.168.1.1'],
  loopback: ['127.0.0.1', '127.8.9.10', '::1'],
  carrierGradeNat: ['100.64.0.1', '100.127.255.254'],
  ipv4MappedPrivate: ['::ffff:10.0.0.1', '::ffff:127.0.0.1', '::ffff:169.254.169.254'],
  uniqueLocal: ['fc00::1', 'fd12:3456:789a::1', 'fd00:ec2::254'],
  unspecified: ['0.0.0.0', '::'],
  linkLocal: ['169.254.0.1', 'fe80::1'],
  metadata: ['169.254.169.254', '169.254.170.2'],
  multicastAndReserved: ['224.0.0.1', 'ff02::1', '240.0.0.1', '255.255.255.255', '192.0.2.1'],
  translatedPrivate: ['64:ff9b::a00:1'],
};

describe('isPublicAddress', () => {
  it('accepts public IPv4 and IPv6 addresses', () => {
    for (const address of publicAddresses) expect(isPublicAddress(address), address).toBe(true);
  });

  it.each(Object.entries(specialAddresses))('refuses %s addresses', (_kind, addresses) => {
    for (const address of addresses) expect(isPublicAddress(address), address).toBe(false);
  });

  it('refuses what is not an address at all', () => {
    for (const text of ['', 'example.com', '10.0.0', '1.2.3.4.5', '[::1]']) expect(isPublicAddress(text), text).toBe(false);
  });
});

/** What the socket's lookup hands the connection, given what the resolver answered. */
function lookUp(answer: dns.LookupAddress[] | Error, all: boolean): Promise<{ error: Error | null; address?: unknown; family?: number }> {
  const resolve = (_hostname: string, _options: dns.LookupAllOptions, callback: (error: NodeJS.ErrnoException | null, addresses: dns.LookupAddress[]) => void) =>
    answer instanceof Error ? callback(answer, []) : callback(null, answer);
  const lookup = publicOnlyLookup('hooks.example.com', resolve);
  return new Promise((resolve) => lookup('hooks.example.com', { all }, ((error: Error | null, address?: unknown, family?: number) => resolve({ error, address, family })) as never));
}

describe('the socket lookup of a webhook', () => {
  it('hands a public answer to the connection, whole or its first address', async () => {
    const answer = [
      { address: '93.184.216.34', family: 4 },
      { address: '2606:2800:220:1:248:1893:25c8:1946', family: 6 },
    ];
    expect(await lookUp(answer, true)).toEqual({ error: null, address: answer, family: undefined });
    expect(await lookUp(answer, false)).toEqual({ error: null, address: '93.184.216.34', family: 4 });
  });

  it('refuses an answer with any private address in it, naming the host and not the address, and logs the address', async () => {
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
    try {
      for (const address of ['10.0.0.1', '::ffff:10.0.0.1', 'fd00:ec2::254', '169.254.169.254', '100.64.0.1', '0.0.0.0', '127.0.0.1']) {
        warn.mockClear();
        const { error } = await lookUp(
          [
            { address: '93.184.216.34', family: 4 },
            { address, family: address.includes(':') ? 6 : 4 },
          ],
          true,
        );
        expect(error, address).toBeInstanceOf(RefusedAddressError);
        expect(error!.message).toMatch(/^hooks\.example\.com is not a public address: .*NOTIFY_PRIVATE_HOSTS/);
        expect(error!.message).not.toContain(address);
        expect(warn).toHaveBeenCalledWith(expect.stringContaining(`hooks.example.com: it resolves to ${address}`));
      }
    } finally {
      warn.mockRestore();
    }
  });

  it('passes a resolver failure on, and fails a name with no address', async () => {
    const failure = Object.assign(new Error('getaddrinfo ENOTFOUND hooks.example.com'), { code: 'ENOTFOUND' });
    expect((await lookUp(failure, true)).error).toBe(failure);
    expect((await lookUp([], true)).error?.message).toBe('hooks.example.com has no address');
    expect(checkResolved([])).toEqual({ ok: false, refused: null });
  });
});

describe('postOutbound', () => {
  it('refuses a private address literal before any connection is made', async () => {
    for (const url of ['https://10.0.0.1/hooks', 'https://[::ffff:10.0.0.1]/', 'https://[fd00::1]:8443/', 'http://169.254.169.254/latest/meta-data', 'https://0.0.0.0/', 'https://100.64.0.1/']) {
      await expect(postOutbound(url, '{}', {}, { timeoutMs: 1000, privateHosts: [] }), url).rejects.toBeInstanceOf(RefusedAddressError);
    }
  });
});

describe('NOTIFY_PRIVATE_HOSTS', () => {
  it('reads hosts, host:port, IPv6 and [IPv6]:port, and refuses anything else at start', () => {
    expect(parseEnv({ NOTIFY_PRIVATE_HOSTS: ' Intranet.Example , hooks.lan:8080, 10.0.0.5:443, ::1, [fd00::7]:9000, printer.lan. ' }).notifyPrivateHosts).toEqual([
      { host: 'intranet.example' },
      { host: 'hooks.lan', port: 8080 },
      { host: '10.0.0.5', port: 443 },
      { host: '::1' },
      { host: 'fd00::7', port: 9000 },
      { host: 'printer.lan' },
    ]);
    expect(parseEnv({}).notifyPrivateHosts).toEqual([]);
    for (const bad of ['hooks.lan:0', 'hooks.lan:65536', 'hooks.lan:http', 'http://hooks.lan', 'hooks.lan/path', '[hooks.lan]:80', 'a b']) {
      expect(parsePrivateHost(bad), bad).toBeUndefined();
      expect(() => parseEnv({ NOTIFY_PRIVATE_HOSTS: `ok.lan,${bad}` }), bad).toThrow(/NOTIFY_PRIVATE_HOSTS: .*is not a host or host:port/);
    }
  });

  it('opens only the port an entry names, and every port of a bare host', () => {
    const allowed = parseEnv({ NOTIFY_PRIVATE_HOSTS: 'hooks.lan:8080,10.0.0.5:443,[fd00::7]:9000,printer.lan' }).notifyPrivateHosts;
    const allows = (url: string) => allowsPrivate(allowed, new URL(url));
    expect(allows('http://hooks.lan:8080/events')).toBe(true);
    expect(allows('http://HOOKS.lan.:8080/')).toBe(true);
    expect(allows('http://hooks.lan/events')).toBe(false);
    expect(allows('http://hooks.lan:8081/')).toBe(false);
    expect(allows('https://10.0.0.5/hooks')).toBe(true);
    expect(allows('http://10.0.0.5/hooks')).toBe(false);
    expect(allows('https://10.0.0.5:6379/')).toBe(false);
    expect(allows('http://[fd00::7]:9000/')).toBe(true);
    expect(allows('http://[fd00::7]:9001/')).toBe(false);
    expect(allows('http://printer.lan:631/')).toBe(true);
    expect(allows('https://printer.lan/')).toBe(true);
    expect(allows('https://other.lan/')).toBe(false);
  });
});
