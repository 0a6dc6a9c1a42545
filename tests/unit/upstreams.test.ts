import { describe, expect, it, vi } from 'vitest';
import { minimalEnvironment } from '@/lib/upstreams/environment';
import { Slots } from '@/lib/upstreams/slots';
import { StderrLog } from '@/lib/upstreams/stderr';

describe("a person's sealed secret for an upstream server", () => {
  async function sealing(secret: string) {
    vi.resetModules();
    vi.stubEnv('AUTH_SECRET', secret);
    globalThis.__mcpTaskServerSecret = undefined;
    return import('@/lib/upstreams/credentials');
  }

  it('opens for the same person and server only, and not once tampered with or under another signing secret', async () => {
    const { sealSecret, openSecret } = await sealing('a'.repeat(64));
    const sealed = sealSecret('sk-live-123', 'user-1', 'remote');
    expect(sealed).not.toContain('sk-live-123');
    expect(sealSecret('sk-live-123', 'user-1', 'remote')).not.toBe(sealed);
    expect(openSecret(sealed, 'user-1', 'remote')).toBe('sk-live-123');
    expect(openSecret(sealed, 'user-2', 'remote')).toBeUndefined();
    expect(openSecret(sealed, 'user-1', 'other')).toBeUndefined();
    const parts = sealed.split('.');
    const flipped = Buffer.from(parts[3], 'base64url');
    flipped[0] ^= 1;
    expect(openSecret([...parts.slice(0, 3), flipped.toString('base64url')].join('.'), 'user-1', 'remote')).toBeUndefined();
    expect(openSecret('not sealed', 'user-1', 'remote')).toBeUndefined();
    const other = await sealing('b'.repeat(64));
    expect(other.openSecret(sealed, 'user-1', 'remote')).toBeUndefined();
    vi.unstubAllEnvs();
  });
});

declare global {
  var __mcpTaskServerSecret: string | undefined;
}

describe('the slots of a server', () => {
  it('let maxConcurrent calls run, queue the rest in order, and drop a waiter whose signal fires', async () => {
    const slots = new Slots(2);
    const never = new AbortController().signal;
    const first = await slots.take(never);
    const second = await slots.take(never);
    expect(slots.free()).toBe(false);
    const order: string[] = [];
    const leaving = new AbortController();
    const third = slots.take(never).then((release) => (order.push('third'), release));
    const gone = slots.take(leaving.signal).catch((error: unknown) => (order.push('gone'), error));
    const fourth = slots.take(never).then((release) => (order.push('fourth'), release));
    leaving.abort(new Error('cancelled'));
    expect(await gone).toEqual(new Error('cancelled'));
    first();
    first();
    (await third)();
    second();
    (await fourth)();
    expect(order).toEqual(['gone', 'third', 'fourth']);
    expect(slots.free()).toBe(true);
    await expect(slots.take(AbortSignal.abort(new Error('already')))).rejects.toThrow('already');
  });
});

describe("a stdio server's stderr", () => {
  it('goes to the log a line at a time, prefixed, and at most so many lines a window', () => {
    const printed: string[] = [];
    const log = new StderrLog('files', 3, 60_000, (line) => printed.push(line));
    log.write('one\ntw');
    log.write(Buffer.from('o\n\nthree\r\nfour\nfive\n'));
    expect(printed).toEqual(['[files] one', '[files] two', '[files] three']);
    vi.useFakeTimers({ now: Date.now() + 61_000 });
    log.write('six\n');
    vi.useRealTimers();
    expect(printed.slice(3)).toEqual(['[files] (2 lines of stderr left out)', '[files] six']);
  });
});

describe("a stdio server's environment", () => {
  it('holds what programs need and none of the server\'s own secrets', () => {
    const env = minimalEnvironment({
      PATH: '/usr/bin',
      HOME: '/home/app',
      AUTH_SECRET: 'secret',
      DATABASE_URL: 'postgres://x',
      SMTP_URL: 'smtp://x',
      VAPID_PRIVATE_KEY: 'k',
      GITHUB_SECRET: 'g',
      TERM: '() { :; }; echo pwned',
    });
    expect(env).toEqual({ PATH: '/usr/bin', HOME: '/home/app' });
  });
});
