import { describe, expect, it } from 'vitest';
import { ConfigError, parseEnv } from '@/lib/env';

describe('configuration', () => {
  it('has defaults for everything', () => {
    const env = parseEnv({});
    expect(env).toMatchObject({
      PORT: 3000,
      HOST: '127.0.0.1',
      DATABASE_PATH: './data/app.db',
      APP_URL: 'http://localhost:3000',
      MCP_MAX_BODY_BYTES: 1024 * 1024,
      TASK_DEFAULT_TTL_MS: 3_600_000,
      TASK_MAX_TTL_MS: 86_400_000,
      TASK_POLL_INTERVAL_MS: 1000,
      TASK_LIST_PAGE_SIZE: 50,
      allowedOrigins: [],
    });
  });

  it('derives APP_URL from PORT and trims trailing slashes', () => {
    expect(parseEnv({ PORT: '8080' }).APP_URL).toBe('http://localhost:8080');
    expect(parseEnv({ APP_URL: 'https://tasks.example.com/' }).APP_URL).toBe('https://tasks.example.com');
    expect(parseEnv({ ALLOWED_ORIGINS: 'https://a.example, https://b.example/' }).allowedOrigins).toEqual([
      'https://a.example',
      'https://b.example',
    ]);
  });

  it('names every bad variable in one message', () => {
    expect(() => parseEnv({ PORT: 'eighty', TASK_POLL_INTERVAL_MS: '-1', APP_URL: 'ftp://x' })).toThrow(ConfigError);
    try {
      parseEnv({ PORT: 'eighty', TASK_POLL_INTERVAL_MS: '-1', APP_URL: 'ftp://x' });
    } catch (error) {
      const message = (error as Error).message;
      expect(message).toMatch(/PORT/);
      expect(message).toMatch(/TASK_POLL_INTERVAL_MS/);
      expect(message).toMatch(/APP_URL/);
    }
  });

  it('refuses an idle timeout shorter than the minute sessions record their use in', () => {
    expect(() => parseEnv({ SESSION_IDLE_TIMEOUT_MS: '5000' })).toThrow(/SESSION_IDLE_TIMEOUT_MS/);
    expect(parseEnv({ SESSION_IDLE_TIMEOUT_MS: '60000' }).SESSION_IDLE_TIMEOUT_MS).toBe(60_000);
  });

  it('keeps the plain-call heartbeat within the 15 s that clients tolerate', () => {
    expect(parseEnv({}).CALL_HEARTBEAT_MS).toBe(10_000);
    expect(parseEnv({ CALL_HEARTBEAT_MS: '15000' }).CALL_HEARTBEAT_MS).toBe(15_000);
    expect(() => parseEnv({ CALL_HEARTBEAT_MS: '15001' })).toThrow(/CALL_HEARTBEAT_MS/);
    expect(() => parseEnv({ CALL_HEARTBEAT_MS: '50' })).toThrow(/CALL_HEARTBEAT_MS/);
  });

  it('answers a plain call within 45 s unless told otherwise, per client name too, and refuses a malformed list', () => {
    expect(parseEnv({}).CALL_ANSWER_WITHIN_MS).toBe(45_000);
    expect(parseEnv({ CALL_ANSWER_WITHIN_MS: '0' }).CALL_ANSWER_WITHIN_MS).toBe(0);
    expect(parseEnv({}).CALL_ANSWER_WITHIN_MS_BY_CLIENT).toEqual(new Map());
    expect(parseEnv({ CALL_ANSWER_WITHIN_MS_BY_CLIENT: 'claude-code = 540000, Some Client=20000,' }).CALL_ANSWER_WITHIN_MS_BY_CLIENT).toEqual(
      new Map([
        ['claude-code', 540_000],
        ['some client', 20_000],
      ]),
    );
    for (const bad of ['claude-code', 'claude-code=soon', '=1000', 'x=-5', 'x=99999999999']) {
      expect(() => parseEnv({ CALL_ANSWER_WITHIN_MS_BY_CLIENT: bad }), bad).toThrow(/CALL_ANSWER_WITHIN_MS_BY_CLIENT.*is not name=milliseconds/);
    }
    expect(() => parseEnv({ CALL_ANSWER_WITHIN_MS: '-1' })).toThrow(/CALL_ANSWER_WITHIN_MS/);
  });

  it('caps sessions and streams per user, and refuses a cap of 0 instead of reading it as none or no cap', () => {
    expect(parseEnv({})).toMatchObject({ MCP_MAX_SESSIONS_PER_USER: 100, MCP_MAX_STREAMS_PER_USER: 100, DASHBOARD_MAX_STREAMS_PER_USER: 10 });
    expect(parseEnv({ MCP_MAX_STREAMS_PER_USER: '1' }).MCP_MAX_STREAMS_PER_USER).toBe(1);
    for (const name of ['MCP_MAX_SESSIONS_PER_USER', 'MCP_MAX_STREAMS_PER_USER', 'DASHBOARD_MAX_STREAMS_PER_USER']) {
      expect(() => parseEnv({ [name]: '0' })).toThrow(new RegExp(`${name}: must be at least 1`));
      expect(() => parseEnv({ [name]: 'many' })).toThrow(new RegExp(name));
    }
  });

  it('refuses a default ttl above the maximum', () => {
    expect(() => parseEnv({ TASK_DEFAULT_TTL_MS: '5000', TASK_MAX_TTL_MS: '1000' })).toThrow(/TASK_DEFAULT_TTL_MS: must not exceed TASK_MAX_TTL_MS/);
  });

  it('has rate limits, a stored-task cap and a log level, each of which can be changed or switched off', () => {
    expect(parseEnv({})).toMatchObject({
      RATE_LIMIT_PER_TOKEN: 1200,
      RATE_LIMIT_PER_USER: 2400,
      RATE_LIMIT_TASK_OPERATIONS_PER_USER: 1200,
      RATE_LIMIT_UNKNOWN_TASKS_PER_USER: 60,
      TASK_MAX_STORED_PER_USER: 10_000,
      LOG_LEVEL: 'info',
    });
    expect(parseEnv({ RATE_LIMIT_PER_TOKEN: '0', LOG_LEVEL: 'silent' })).toMatchObject({ RATE_LIMIT_PER_TOKEN: 0, LOG_LEVEL: 'silent' });
    expect(() => parseEnv({ RATE_LIMIT_PER_USER: '-1' })).toThrow(/RATE_LIMIT_PER_USER/);
    expect(() => parseEnv({ TASK_MAX_STORED_PER_USER: '0' })).toThrow(/TASK_MAX_STORED_PER_USER/);
    expect(() => parseEnv({ LOG_LEVEL: 'loud' })).toThrow(/LOG_LEVEL/);
  });

  it("sets how far the server's heap may grow past its live size, 0 leaving V8's own policy", () => {
    expect(parseEnv({}).HEAP_GROWTH_PERCENT).toBe(10);
    expect(parseEnv({ HEAP_GROWTH_PERCENT: '0' }).HEAP_GROWTH_PERCENT).toBe(0);
    expect(parseEnv({ HEAP_GROWTH_PERCENT: '50' }).HEAP_GROWTH_PERCENT).toBe(50);
    for (const value of ['-1', '301', '12.5', 'lots']) {
      expect(() => parseEnv({ HEAP_GROWTH_PERCENT: value })).toThrow(/HEAP_GROWTH_PERCENT/);
    }
  });

  it('refuses to serve a non-loopback address over http unless told to, and says why', () => {
    for (const HOST of ['0.0.0.0', '192.168.1.20', '::', 'tasks.example.com']) {
      expect(() => parseEnv({ HOST })).toThrow(ConfigError);
      expect(() => parseEnv({ HOST, APP_URL: 'http://tasks.example.com' })).toThrow(/APP_URL: must be an https URL.*Secure.*in clear.*ALLOW_INSECURE_HTTP=true/s);
      expect(parseEnv({ HOST, APP_URL: 'https://tasks.example.com' }).APP_URL).toBe('https://tasks.example.com');
      expect(parseEnv({ HOST, ALLOW_INSECURE_HTTP: 'true' }).APP_URL).toBe('http://localhost:3000');
    }
    for (const HOST of ['127.0.0.1', '127.1.2.3', 'localhost', '::1', '[::1]']) {
      expect(parseEnv({ HOST }).HOST).toBe(HOST);
    }
    expect(() => parseEnv({ HOST: '0.0.0.0', ALLOW_INSECURE_HTTP: 'yes' })).toThrow(/ALLOW_INSECURE_HTTP/);
  });

  it('reads the proxy and throttle settings', () => {
    expect(parseEnv({})).toMatchObject({
      trustProxy: false,
      AUTH_THROTTLE_WINDOW_SECONDS: 900,
      SIGNIN_MAX_PER_IP: 50,
      SIGNIN_MAX_PER_ACCOUNT: 10,
      SIGNIN_MAX_PER_ACCOUNT_ALL_ADDRESSES: 100,
      SIGNUP_MAX_PER_IP: 20,
    });
    expect(parseEnv({ TRUST_PROXY: 'true', SIGNIN_MAX_PER_ACCOUNT: '3' })).toMatchObject({ trustProxy: true, SIGNIN_MAX_PER_ACCOUNT: 3 });
    expect(() => parseEnv({ SIGNIN_MAX_PER_IP: '0' })).toThrow(/SIGNIN_MAX_PER_IP/);
  });

  it('reads the authorization server settings', () => {
    expect(parseEnv({})).toMatchObject({
      OAUTH_ACCESS_TOKEN_TTL_SECONDS: 3600,
      OAUTH_REFRESH_TOKEN_TTL_SECONDS: 30 * 24 * 60 * 60,
      OAUTH_REGISTRATIONS_PER_HOUR: 20,
      oauthMetadataPrivateHosts: [],
    });
    expect(parseEnv({ OAUTH_CLIENT_METADATA_PRIVATE_HOSTS: ' Intranet.Example , localhost' }).oauthMetadataPrivateHosts).toEqual(['intranet.example', 'localhost']);
    expect(() => parseEnv({ OAUTH_ACCESS_TOKEN_TTL_SECONDS: '10' })).toThrow(/OAUTH_ACCESS_TOKEN_TTL_SECONDS/);
    expect(() => parseEnv({ OAUTH_REGISTRATIONS_PER_HOUR: '0' })).toThrow(/OAUTH_REGISTRATIONS_PER_HOUR/);
  });

  it('reads the servers file path, an empty value meaning none', () => {
    expect(parseEnv({}).MCP_SERVERS_FILE).toBeUndefined();
    expect(parseEnv({ MCP_SERVERS_FILE: '' }).MCP_SERVERS_FILE).toBeUndefined();
    expect(parseEnv({ MCP_SERVERS_FILE: './servers.json' }).MCP_SERVERS_FILE).toBe('./servers.json');
  });

  it('groups SQLite commits and flushes them as the normal setting does unless told otherwise, and refuses other words', () => {
    expect(parseEnv({})).toMatchObject({ SQLITE_GROUP_COMMIT: true, SQLITE_SYNCHRONOUS: 'normal' });
    expect(parseEnv({ SQLITE_GROUP_COMMIT: 'false', SQLITE_SYNCHRONOUS: 'full' })).toMatchObject({ SQLITE_GROUP_COMMIT: false, SQLITE_SYNCHRONOUS: 'full' });
    expect(() => parseEnv({ SQLITE_SYNCHRONOUS: 'off' })).toThrow(/SQLITE_SYNCHRONOUS/);
    expect(() => parseEnv({ SQLITE_GROUP_COMMIT: 'yes' })).toThrow(/SQLITE_GROUP_COMMIT/);
  });
});
