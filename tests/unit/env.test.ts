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
});
