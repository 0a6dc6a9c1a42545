import net from 'node:net';
import { z } from 'zod';

/**
 * All configuration, read from the environment and validated once. Every value has a default so that
 * `npm start` works with no setup; a bad value stops the server at start with a message naming it.
 */
const positiveInt = (fallback: number) => z.coerce.number().int().positive().default(fallback);
/** A cap on things one user holds open; 0 is refused rather than read as "none allowed" or "no cap". */
const perUserCap = (fallback: number) =>
  z.coerce.number().int().min(1, { message: 'must be at least 1 (0 would refuse every one; there is no switch to turn the cap off)' }).default(fallback);
const flag = (fallback: 'true' | 'false') => z.enum(['true', 'false']).default(fallback).transform((value) => value === 'true');

const envSchema = z
  .object({
    PORT: z.coerce.number().int().min(1).max(65535).default(3000),
    HOST: z.string().min(1).default('127.0.0.1'),
    DATABASE_PATH: z.string().min(1).default('./data/app.db'),
    // Set, it selects PostgreSQL (several instances may share it) and DATABASE_PATH is not used.
    DATABASE_URL: z
      .url({ protocol: /^postgres(ql)?$/, error: 'must be a postgres:// or postgresql:// URL' })
      .optional()
      .or(z.literal('').transform(() => undefined)),
    DATABASE_POOL_SIZE: z.coerce.number().int().min(1).max(100).default(10),
    // How long a write waits (without blocking anything else) for SQLite's write lock held by another process.
    DATABASE_BUSY_TIMEOUT_MS: z.coerce.number().int().min(0).max(120_000).default(5_000),
    // SQLite: writes that arrive together commit together (one commit, each acknowledged after it), and when a
    // commit is flushed to disk: "normal" survives the process being killed, "full" also power loss.
    SQLITE_GROUP_COMMIT: flag('true'),
    SQLITE_SYNCHRONOUS: z.enum(['normal', 'full']).default('normal'),
    // Free space on the database's disk (SQLite): below the first the server will not start; below the second it warns.
    STORAGE_MIN_FREE_MB: z.coerce.number().nonnegative().default(8),
    STORAGE_WARN_FREE_MB: z.coerce.number().nonnegative().default(256),
    // A question that storage cannot take is tried again this long; then its task fails, saying why.
    STORAGE_RETRY_WINDOW_MS: z.coerce.number().int().min(1_000).default(60_000),
    APP_URL: z.url({ protocol: /^https?$/ }).optional(),
    ALLOWED_ORIGINS: z.string().default(''),
    MCP_MAX_BODY_BYTES: positiveInt(1024 * 1024),
    TASK_DEFAULT_TTL_MS: positiveInt(60 * 60 * 1000),
    TASK_MAX_TTL_MS: positiveInt(24 * 60 * 60 * 1000),
    TASK_POLL_INTERVAL_MS: positiveInt(1000),
    TASK_LIST_PAGE_SIZE: z.coerce.number().int().min(1).max(1000).default(50),
    TASK_SWEEP_INTERVAL_MS: positiveInt(60 * 1000),
    TASK_MAX_ACTIVE_PER_USER: positiveInt(100),
    // A running task's lease: another instance takes over the tasks of one that died within this (plus a scan, ≤ 2 s).
    TASK_LEASE_MS: z.coerce.number().int().min(1_000).max(10 * 60_000).default(10_000),
    SESSION_MESSAGE_RETENTION_MS: positiveInt(60 * 60 * 1000),
    // Clients reset their request timeouts on progress; some give up after 15 s of silence.
    CALL_HEARTBEAT_MS: z.coerce.number().int().min(100).max(15_000).default(10_000),
    // A plain call whose task is still running after this long is answered "still running" with the task's id
    // (the client fetches the result with task_result): below the 60 s the SDKs give a request. 0 waits to the end.
    CALL_ANSWER_WITHIN_MS: z.coerce.number().int().min(0).max(24 * 60 * 60 * 1000).default(45_000),
    // The same per client, by the clientInfo.name it gives: "claude-code=540000,Some Client=20000".
    CALL_ANSWER_WITHIN_MS_BY_CLIENT: z
      .string()
      .default('')
      .transform((value, context) => {
        const windows = new Map<string, number>();
        for (const entry of value.split(',').map((part) => part.trim()).filter(Boolean)) {
          const match = /^(.+?)\s*=\s*(\d+)$/.exec(entry);
          if (match && Number(match[2]) <= 24 * 60 * 60 * 1000) windows.set(match[1].toLowerCase(), Number(match[2]));
          else context.addIssue({ code: 'custom', message: `"${entry}" is not name=milliseconds (at most 86400000); entries are comma-separated` });
        }
        return windows;
      }),
    // A 2026-07-28 plain call waits this long per round, then answers with a requestState to retry with.
    MCP_ROUND_WAIT_MS: z.coerce.number().int().min(100).max(120_000).default(20_000),
    // Sessions record their last use once a minute, so a shorter timeout could end one in use.
    SESSION_IDLE_TIMEOUT_MS: z.coerce.number().int().min(60_000).default(24 * 60 * 60 * 1000),
    // Requests per minute on /mcp; 0 switches a limit off. Task operations and unknown task ids count on their own.
    RATE_LIMIT_PER_TOKEN: z.coerce.number().int().nonnegative().default(1200),
    RATE_LIMIT_PER_USER: z.coerce.number().int().nonnegative().default(2400),
    RATE_LIMIT_TASK_OPERATIONS_PER_USER: z.coerce.number().int().nonnegative().default(1200),
    RATE_LIMIT_UNKNOWN_TASKS_PER_USER: z.coerce.number().int().nonnegative().default(60),
    TASK_MAX_STORED_PER_USER: positiveInt(10_000),
    MCP_MAX_SESSIONS_PER_USER: perUserCap(100),
    MCP_MAX_STREAMS_PER_USER: perUserCap(100),
    DASHBOARD_MAX_STREAMS_PER_USER: perUserCap(10),
    // The mcpServers JSON (as Claude Desktop, Cursor and Claude Code write it) whose servers' tools we serve as tasks.
    MCP_SERVERS_FILE: z.string().min(1).optional(),
    // How far V8 lets the heap grow past what a full collection left live, in percent (at least 32 MB);
    // 0 leaves V8's own policy (two to four times on a busy server). npm start's server (README, "Memory").
    HEAP_GROWTH_PERCENT: z.coerce.number().int().min(0).max(300).default(10),
    LOG_LEVEL: z.enum(['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent']).default('info'),
    ALLOW_SIGNUP: flag('true'),
    TRUST_PROXY: flag('false'),
    ALLOW_INSECURE_HTTP: flag('false'),
    AUTH_THROTTLE_WINDOW_SECONDS: positiveInt(15 * 60),
    SIGNIN_MAX_PER_IP: positiveInt(50),
    SIGNIN_MAX_PER_ACCOUNT: positiveInt(10),
    SIGNIN_MAX_PER_ACCOUNT_ALL_ADDRESSES: positiveInt(100),
    SIGNUP_MAX_PER_IP: positiveInt(20),
    OAUTH_ACCESS_TOKEN_TTL_SECONDS: z.coerce.number().int().min(60).max(24 * 60 * 60).default(60 * 60),
    OAUTH_REFRESH_TOKEN_TTL_SECONDS: z.coerce.number().int().min(60 * 60).default(30 * 24 * 60 * 60),
    OAUTH_REGISTRATIONS_PER_HOUR: positiveInt(20),
    // Long enough for the person to come back to the browser tab; short enough that junk does not pile up.
    OAUTH_UNUSED_CLIENT_TTL_SECONDS: z.coerce.number().int().min(10 * 60).default(24 * 60 * 60),
    OAUTH_CLIENT_METADATA_PRIVATE_HOSTS: z.string().default(''),
    // Telling people: e-mail through this SMTP server (off when unset), webhooks, and how hard to try.
    SMTP_URL: z
      .url({ protocol: /^smtps?$/, error: 'must be an smtp:// or smtps:// URL' })
      .optional(),
    SMTP_FROM: z.string().min(3).optional(),
    // Every signed-in person's webhooks may reach what this lists: a bare host opens all its ports.
    NOTIFY_PRIVATE_HOSTS: z
      .string()
      .default('')
      .transform((value, context) => {
        const hosts: PrivateHost[] = [];
        for (const entry of value.split(',').map((part) => part.trim()).filter(Boolean)) {
          const parsed = parsePrivateHost(entry);
          if (parsed) hosts.push(parsed);
          else context.addIssue({ code: 'custom', message: `"${entry}" is not a host or host:port (a port from 1 to 65535); entries are comma-separated` });
        }
        return hosts;
      }),
    WEBHOOK_TIMEOUT_MS: z.coerce.number().int().min(100).max(60_000).default(10_000),
    NOTIFY_RETRY_BASE_MS: z.coerce.number().int().min(10).max(10 * 60_000).default(5_000),
    NOTIFY_RETRY_WINDOW_MS: z.coerce.number().int().min(100).default(24 * 60 * 60 * 1000),
    NOTIFY_MAX_PER_MINUTE: z.coerce.number().int().min(1).max(600).default(4),
    NOTIFY_EVENT_RETENTION_MS: positiveInt(7 * 24 * 60 * 60 * 1000),
    // Browser push: the VAPID key pair (generated and kept beside the database when unset) and its contact.
    VAPID_PUBLIC_KEY: z.string().regex(/^[A-Za-z0-9_-]{87}$/, 'must be a base64url P-256 public key (87 characters)').optional(),
    VAPID_PRIVATE_KEY: z.string().regex(/^[A-Za-z0-9_-]{43}$/, 'must be a base64url P-256 private key (43 characters)').optional(),
    VAPID_SUBJECT: z.string().regex(/^(mailto:|https:\/\/)/, 'must be a mailto: or https: URL').optional(),
  })
  .refine((env) => (env.VAPID_PUBLIC_KEY === undefined) === (env.VAPID_PRIVATE_KEY === undefined), {
    path: ['VAPID_PRIVATE_KEY'],
    message: 'VAPID_PUBLIC_KEY and VAPID_PRIVATE_KEY are set together (npx web-push generate-vapid-keys makes a pair)',
  })
  .refine((env) => env.TASK_DEFAULT_TTL_MS <= env.TASK_MAX_TTL_MS, {
    path: ['TASK_DEFAULT_TTL_MS'],
    message: 'must not exceed TASK_MAX_TTL_MS',
  })
  .refine((env) => env.ALLOW_INSECURE_HTTP || isLoopbackHost(env.HOST) || env.APP_URL?.startsWith('https:'), {
    path: ['APP_URL'],
    message:
      'must be an https URL when HOST is not a loopback address: over http, session cookies lose their Secure flag and ' +
      'passwords and tokens travel in clear. Put a TLS proxy in front and set APP_URL=https://…, or set ALLOW_INSECURE_HTTP=true ' +
      'to accept that on a trusted network.',
  });

type ParsedEnv = z.infer<typeof envSchema>;
export type Env = Omit<ParsedEnv, 'ALLOW_SIGNUP' | 'TRUST_PROXY' | 'OAUTH_CLIENT_METADATA_PRIVATE_HOSTS' | 'NOTIFY_PRIVATE_HOSTS'> & {
  APP_URL: string;
  allowedOrigins: string[];
  allowSignup: boolean;
  /** Read the client's address from X-Forwarded-For (the entry the proxy in front added). */
  trustProxy: boolean;
  /** Hosts whose client metadata documents may be fetched from private or loopback addresses. */
  oauthMetadataPrivateHosts: string[];
  /** Hosts (and ports) webhooks may be delivered to on private or loopback addresses, and over plain http. */
  notifyPrivateHosts: PrivateHost[];
};

/** An entry of NOTIFY_PRIVATE_HOSTS: a host, and the one port it opens (every port when it names none). */
export interface PrivateHost {
  /** Lower case, IPv6 without brackets, no trailing dot: as URLs are compared with it. */
  host: string;
  port?: number;
}

/**
 * Reads an entry of NOTIFY_PRIVATE_HOSTS: `host`, `host:port`, an IPv6 address, or `[IPv6]:port`;
 * undefined for anything else (a port outside 1 to 65535, a scheme, a path).
 */
export function parsePrivateHost(entry: string): PrivateHost | undefined {
  const text = entry.trim().toLowerCase();
  const bracketed = /^\[([^\]]+)\](?::(\d+))?$/.exec(text);
  const [host, port] = bracketed ? [bracketed[1], bracketed[2]] : net.isIPv6(text) ? [text, undefined] : (/^([^:]+)(?::(\d+))?$/.exec(text)?.slice(1, 3) ?? []);
  if (!host || /[/\s@?#\\]/.test(host) || (bracketed && !net.isIPv6(host))) return undefined;
  const bare = host.replace(/\.$/, '');
  if (port === undefined) return { host: bare };
  const number = Number(port);
  return Number.isInteger(number) && number >= 1 && number <= 65535 ? { host: bare, port: number } : undefined;
}

/** Addresses only this machine can reach: listening there over http exposes nothing. */
function isLoopbackHost(host: string): boolean {
  const bare = host.replace(/^\[|\]$/g, '').toLowerCase();
  return bare === 'localhost' || bare === '::1' || /^127(\.\d{1,3}){3}$/.test(bare);
}

export class ConfigError extends Error {
  override name = 'ConfigError';
}

/** Parses an environment; throws a ConfigError listing every bad variable. */
export function parseEnv(source: Record<string, string | undefined>): Env {
  const blankAsUnset = Object.fromEntries(Object.entries(source).filter(([, value]) => value !== ''));
  const parsed = envSchema.safeParse(blankAsUnset);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((issue) => `  ${issue.path.join('.')}: ${issue.message}`);
    throw new ConfigError(`Invalid configuration:\n${lines.join('\n')}`);
  }
  const env = parsed.data;
  const appUrl = (env.APP_URL ?? `http://localhost:${env.PORT}`).replace(/\/+$/, '');
  const allowedOrigins = env.ALLOWED_ORIGINS.split(',')
    .map((origin) => origin.trim().replace(/\/+$/, ''))
    .filter(Boolean);
  const { ALLOW_SIGNUP, TRUST_PROXY, OAUTH_CLIENT_METADATA_PRIVATE_HOSTS, NOTIFY_PRIVATE_HOSTS, ...rest } = env;
  return {
    ...rest,
    APP_URL: appUrl,
    allowedOrigins,
    allowSignup: ALLOW_SIGNUP,
    trustProxy: TRUST_PROXY,
    oauthMetadataPrivateHosts: hostList(OAUTH_CLIENT_METADATA_PRIVATE_HOSTS),
    notifyPrivateHosts: NOTIFY_PRIVATE_HOSTS,
  };
}

function hostList(value: string): string[] {
  return value
    .split(',')
    .map((host) => host.trim().toLowerCase())
    .filter(Boolean);
}

const globalForEnv = globalThis as unknown as { __mcpTaskServerEnv?: Env };

/** The process environment, parsed on first use (never at build time). */
export function getEnv(): Env {
  globalForEnv.__mcpTaskServerEnv ??= parseEnv(process.env);
  return globalForEnv.__mcpTaskServerEnv;
}
