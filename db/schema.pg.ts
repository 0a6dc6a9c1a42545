/**
 * The PostgreSQL twin of db/schema.ts: the same tables, columns, indexes and constraints, with types
 * that hold every value the SQLite database holds exactly. Change both together; db:copy refuses a
 * SQLite file whose columns differ from these.
 */
import { sql } from 'drizzle-orm';
import { bigint, customType, doublePrecision, index, integer, pgTable, text, uniqueIndex } from 'drizzle-orm/pg-core';
import {
  clientRegistrations,
  deliveryOutcomes,
  inputKinds,
  inputStatuses,
  notificationChannels,
  notificationEventTypes,
  notificationTargetStatuses,
  taskInvocations,
  taskStatuses,
  type NotificationEventType,
  type NotificationTargetOptions,
} from './schema';

/** Times are stored as milliseconds since the epoch (UTC); they outgrow a 32-bit integer. */
const millis = (name: string) => bigint(name, { mode: 'number' });

/**
 * SQLite's 64-bit INTEGER for counts that a client or an operator chooses (a task's ttl, a poll
 * interval), so that nothing the SQLite server accepted is refused here.
 */
const int64 = (name: string) => bigint(name, { mode: 'number' });

/**
 * JSON kept as the text the SQLite schema stores (drizzle's `text(…, { mode: 'json' })`), byte for
 * byte: jsonb would reorder keys and drop duplicates, and results must come back exactly as written.
 */
function jsonText<T>(name: string) {
  return customType<{ data: T; driverData: string }>({
    dataType: () => 'text',
    toDriver: (value) => JSON.stringify(value),
    fromDriver: (value) => JSON.parse(value) as T,
  })(name);
}

/** SQLite's AUTOINCREMENT key; `by default` so that db:copy can keep the ids the SQLite file gave out. */
const serialId = (name: string) => bigint(name, { mode: 'number' }).primaryKey().generatedByDefaultAsIdentity();

export const users = pgTable(
  'users',
  {
    id: text('id').primaryKey(),
    email: text('email').notNull(),
    name: text('name'),
    passwordHash: text('password_hash'),
    sessionGeneration: integer('session_generation').notNull().default(0),
    verifiedEmail: text('verified_email'),
    reclaimedAt: millis('reclaimed_at'),
    createdAt: millis('created_at').notNull(),
  },
  (table) => [uniqueIndex('users_email_unique').on(table.email)],
);

export const emailConfirmations = pgTable(
  'email_confirmations',
  {
    id: text('id').primaryKey(),
    userId: text('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    email: text('email').notNull(),
    createdAt: millis('created_at').notNull(),
    expiresAt: millis('expires_at').notNull(),
    usedAt: millis('used_at'),
  },
  (table) => [index('email_confirmations_user_idx').on(table.userId, table.createdAt)],
);

/**
 * A person's own secret for an upstream server of the servers file whose entry has `perUserHeader`
 * (an API key, a personal token): sealed with AES-256-GCM under a key derived from the signing secret,
 * bound to the person and the server, never shown again.
 */
export const upstreamCredentials = pgTable(
  'upstream_credentials',
  {
    userId: text('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    serverName: text('server_name').notNull(),
    sealed: text('sealed').notNull(),
    createdAt: millis('created_at').notNull(),
  },
  (table) => [uniqueIndex('upstream_credentials_user_server_unique').on(table.userId, table.serverName)],
);

export const linkedAccounts = pgTable(
  'linked_accounts',
  {
    provider: text('provider').notNull(),
    providerAccountId: text('provider_account_id').notNull(),
    userId: text('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    createdAt: millis('created_at').notNull(),
  },
  (table) => [
    uniqueIndex('linked_accounts_provider_account_unique').on(table.provider, table.providerAccountId),
    index('linked_accounts_user_idx').on(table.userId),
  ],
);

export const accessTokens = pgTable(
  'access_tokens',
  {
    id: text('id').primaryKey(),
    userId: text('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    name: text('name').notNull(),
    tokenHash: text('token_hash').notNull(),
    lastFour: text('last_four').notNull(),
    createdAt: millis('created_at').notNull(),
    lastUsedAt: millis('last_used_at'),
    expiresAt: millis('expires_at'),
    revokedAt: millis('revoked_at'),
  },
  (table) => [
    uniqueIndex('access_tokens_hash_unique').on(table.tokenHash),
    index('access_tokens_user_idx').on(table.userId, table.createdAt),
  ],
);

export const mcpSessions = pgTable(
  'mcp_sessions',
  {
    id: text('id').primaryKey(),
    userId: text('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    protocolVersion: text('protocol_version').notNull(),
    clientName: text('client_name'),
    clientVersion: text('client_version'),
    clientCapabilities: jsonText<Record<string, unknown>>('client_capabilities'),
    logLevel: text('log_level'),
    createdAt: millis('created_at').notNull(),
    lastSeenAt: millis('last_seen_at').notNull(),
    endedAt: millis('ended_at'),
  },
  (table) => [index('mcp_sessions_user_idx').on(table.userId)],
);

export const sessionMessages = pgTable(
  'session_messages',
  {
    id: serialId('id'),
    sessionId: text('session_id')
      .notNull()
      .references(() => mcpSessions.id, { onDelete: 'cascade' }),
    stream: text('stream'),
    message: jsonText<Record<string, unknown>>('message').notNull(),
    createdAt: millis('created_at').notNull(),
  },
  (table) => [
    index('session_messages_session_idx').on(table.sessionId, table.id),
    index('session_messages_stream_idx').on(table.stream, table.id),
  ],
);

export const tasks = pgTable(
  'tasks',
  {
    id: text('id').primaryKey(),
    userId: text('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    sessionId: text('session_id'),
    clientName: text('client_name'),
    clientVersion: text('client_version'),
    /** The protocol revision the task's client spoke (2025-11-25, 2026-07-28…): how the dashboard tells the eras apart. */
    protocolVersion: text('protocol_version'),
    toolName: text('tool_name').notNull(),
    arguments: jsonText<Record<string, unknown>>('arguments').notNull(),
    status: text('status', { enum: taskStatuses }).notNull(),
    statusMessage: text('status_message'),
    createdAt: millis('created_at').notNull(),
    lastUpdatedAt: millis('last_updated_at').notNull(),
    ttlMs: int64('ttl_ms').notNull(),
    expiresAt: millis('expires_at').notNull(),
    pollIntervalMs: int64('poll_interval_ms').notNull(),
    progressToken: jsonText<string | number>('progress_token'),
    // SQLite's REAL is an 8-byte float; PostgreSQL's `real` has 4 bytes and would round progress values.
    progress: doublePrecision('progress'),
    progressTotal: doublePrecision('progress_total'),
    progressMessage: text('progress_message'),
    partialOutput: text('partial_output'),
    result: jsonText<Record<string, unknown>>('result'),
    error: jsonText<{ code: number; message: string; data?: unknown }>('error'),
    attempt: integer('attempt').notNull().default(1),
    invocation: text('invocation', { enum: taskInvocations }).notNull().default('task'),
    callRequestId: jsonText<string | number>('call_request_id'),
    runner: text('runner'),
    leaseExpiresAt: millis('lease_expires_at'),
    /**
     * A tool of an upstream server that runs as a task there: that task's id, and the Streamable HTTP
     * session it belongs to, so that a restart (or another instance) follows it instead of calling again.
     */
    upstreamTaskId: text('upstream_task_id'),
    upstreamSessionId: text('upstream_session_id'),
  },
  (table) => [
    index('tasks_user_created_idx').on(table.userId, table.createdAt, table.id),
    index('tasks_status_idx').on(table.status),
    index('tasks_user_status_idx').on(table.userId, table.status),
    index('tasks_expires_idx').on(table.expiresAt),
    index('tasks_session_call_idx').on(table.sessionId, table.callRequestId),
  ],
);

export const taskEvents = pgTable(
  'task_events',
  {
    id: serialId('id'),
    taskId: text('task_id')
      .notNull()
      .references(() => tasks.id, { onDelete: 'cascade' }),
    at: millis('at').notNull(),
    fromStatus: text('from_status', { enum: taskStatuses }),
    toStatus: text('to_status', { enum: taskStatuses }).notNull(),
    statusMessage: text('status_message'),
    actor: text('actor').notNull().default(sql`'system'`),
  },
  (table) => [index('task_events_task_idx').on(table.taskId, table.id)],
);

export const taskInputs = pgTable(
  'task_inputs',
  {
    id: text('id').primaryKey(),
    taskId: text('task_id')
      .notNull()
      .references(() => tasks.id, { onDelete: 'cascade' }),
    userId: text('user_id').notNull(),
    key: text('key').notNull(),
    kind: text('kind', { enum: inputKinds }).notNull(),
    request: jsonText<Record<string, unknown>>('request').notNull(),
    status: text('status', { enum: inputStatuses }).notNull(),
    response: jsonText<Record<string, unknown>>('response'),
    answeredBy: text('answered_by'),
    answeredByLabel: text('answered_by_label'),
    answeredVia: text('answered_via'),
    clientTaskId: text('client_task_id'),
    createdAt: millis('created_at').notNull(),
    answeredAt: millis('answered_at'),
  },
  (table) => [
    uniqueIndex('task_inputs_task_key_unique').on(table.taskId, table.key),
    index('task_inputs_user_status_idx').on(table.userId, table.status, table.createdAt),
  ],
);

export const oauthRecords = pgTable(
  'oauth_records',
  {
    model: text('model').notNull(),
    idHash: text('id_hash').notNull(),
    payload: jsonText<Record<string, unknown>>('payload').notNull(),
    grantId: text('grant_id'),
    uid: text('uid'),
    registeredVia: text('registered_via'),
    expiresAt: millis('expires_at'),
    consumedAt: millis('consumed_at'),
  },
  (table) => [
    uniqueIndex('oauth_records_model_id_unique').on(table.model, table.idHash),
    index('oauth_records_grant_idx').on(table.grantId),
    index('oauth_records_uid_idx').on(table.uid),
    index('oauth_records_expires_idx').on(table.expiresAt),
  ],
);

export const oauthConsents = pgTable(
  'oauth_consents',
  {
    id: text('id').primaryKey(),
    userId: text('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    clientId: text('client_id').notNull(),
    clientName: text('client_name'),
    registration: text('registration', { enum: clientRegistrations }).notNull(),
    redirectHost: text('redirect_host'),
    grantId: text('grant_id').notNull(),
    scope: text('scope').notNull(),
    allowedAt: millis('allowed_at').notNull(),
    lastUsedAt: millis('last_used_at'),
  },
  (table) => [
    uniqueIndex('oauth_consents_user_client_unique').on(table.userId, table.clientId),
    index('oauth_consents_grant_idx').on(table.grantId),
  ],
);

export const notificationEvents = pgTable(
  'notification_events',
  {
    id: serialId('id'),
    userId: text('user_id').notNull(),
    taskId: text('task_id').notNull(),
    type: text('type', { enum: notificationEventTypes }).notNull(),
    payload: jsonText<Record<string, unknown>>('payload').notNull(),
    createdAt: millis('created_at').notNull(),
  },
  (table) => [index('notification_events_user_idx').on(table.userId, table.id), index('notification_events_created_idx').on(table.createdAt)],
);

export const notificationTargets = pgTable(
  'notification_targets',
  {
    id: text('id').primaryKey(),
    userId: text('user_id').references(() => users.id, { onDelete: 'cascade' }),
    channel: text('channel', { enum: notificationChannels }).notNull(),
    address: text('address').notNull(),
    secret: text('secret'),
    events: jsonText<NotificationEventType[]>('events').notNull(),
    options: jsonText<NotificationTargetOptions>('options').notNull(),
    status: text('status', { enum: notificationTargetStatuses }).notNull(),
    cursor: int64('cursor').notNull(),
    attempts: integer('attempts').notNull().default(0),
    failingSince: millis('failing_since'),
    lastError: text('last_error'),
    nextAttemptAt: millis('next_attempt_at').notNull().default(0),
    leaseHolder: text('lease_holder'),
    leaseUntil: millis('lease_until'),
    windowStart: millis('window_start').notNull().default(0),
    sentInWindow: integer('sent_in_window').notNull().default(0),
    sessionGeneration: integer('session_generation').notNull().default(0),
    createdAt: millis('created_at').notNull(),
  },
  (table) => [index('notification_targets_user_idx').on(table.userId), index('notification_targets_due_idx').on(table.status, table.nextAttemptAt)],
);

export const notificationAttempts = pgTable(
  'notification_attempts',
  {
    id: serialId('id'),
    targetId: text('target_id')
      .notNull()
      .references(() => notificationTargets.id, { onDelete: 'cascade' }),
    messageId: text('message_id').notNull(),
    eventType: text('event_type').notNull(),
    events: integer('events').notNull().default(1),
    attempt: integer('attempt').notNull(),
    at: millis('at').notNull(),
    outcome: text('outcome', { enum: deliveryOutcomes }).notNull(),
    statusCode: integer('status_code'),
    response: text('response'),
    error: text('error'),
    durationMs: int64('duration_ms').notNull(),
  },
  (table) => [index('notification_attempts_target_idx').on(table.targetId, table.id)],
);

export const notificationPreferences = pgTable('notification_preferences', {
  userId: text('user_id')
    .primaryKey()
    .references(() => users.id, { onDelete: 'cascade' }),
  quietWhileLive: integer('quiet_while_live').notNull().default(0),
  maxPerMinute: integer('max_per_minute').notNull(),
});
