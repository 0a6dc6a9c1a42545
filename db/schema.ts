import { sql } from 'drizzle-orm';
import { index, integer, real, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core';

/** Times are stored as integer milliseconds since the epoch (UTC). */
const millis = (name: string) => integer(name, { mode: 'number' });

export const users = sqliteTable(
  'users',
  {
    id: text('id').primaryKey(),
    email: text('email').notNull(),
    name: text('name'),
    passwordHash: text('password_hash'),
    /** Embedded in every session token; raising it ends every session signed before (password change, sign out everywhere). */
    sessionGeneration: integer('session_generation').notNull().default(0),
    /**
     * The address proved to be the person's: by a confirmation link sent to it, or by GitHub or Google
     * vouching for it. Sign-up proves nothing, so e-mail notifications go only to this address.
     */
    verifiedEmail: text('verified_email'),
    /**
     * When a GitHub or Google sign-in took the account back from a password nobody proved, removing what
     * that password had set up; the dashboard says so until the person has read it.
     */
    reclaimedAt: millis('reclaimed_at'),
    createdAt: millis('created_at').notNull(),
  },
  (table) => [uniqueIndex('users_email_unique').on(table.email)],
);

/**
 * A link sent to prove an address (`id` is the signed link's `jti`): it works once, until `expiresAt`,
 * for the account and the address it was sent for.
 */
export const emailConfirmations = sqliteTable(
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
export const upstreamCredentials = sqliteTable(
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

/** GitHub and Google accounts joined to a user: a provider's account id signs in as exactly one user. */
export const linkedAccounts = sqliteTable(
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

export const accessTokens = sqliteTable(
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

export const mcpSessions = sqliteTable(
  'mcp_sessions',
  {
    id: text('id').primaryKey(),
    userId: text('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    protocolVersion: text('protocol_version').notNull(),
    clientName: text('client_name'),
    clientVersion: text('client_version'),
    clientCapabilities: text('client_capabilities', { mode: 'json' }).$type<Record<string, unknown>>(),
    /** The least severe log level the client asked for (logging/setLevel); null until it asks. */
    logLevel: text('log_level'),
    createdAt: millis('created_at').notNull(),
    lastSeenAt: millis('last_seen_at').notNull(),
    endedAt: millis('ended_at'),
  },
  (table) => [index('mcp_sessions_user_idx').on(table.userId)],
);

/**
 * Messages the server sends a session outside any request (task status, progress): the GET stream
 * reads them in id order, and the id is the SSE event id that `Last-Event-ID` resumes from.
 */
export const sessionMessages = sqliteTable(
  'session_messages',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    sessionId: text('session_id')
      .notNull()
      .references(() => mcpSessions.id, { onDelete: 'cascade' }),
    /**
     * The stream a message belongs to: null for the session's GET stream, else the key of one POST
     * response stream, so that a client resuming that stream with Last-Event-ID gets only its messages.
     */
    stream: text('stream'),
    message: text('message', { mode: 'json' }).notNull().$type<Record<string, unknown>>(),
    createdAt: millis('created_at').notNull(),
  },
  (table) => [
    index('session_messages_session_idx').on(table.sessionId, table.id),
    index('session_messages_stream_idx').on(table.stream, table.id),
  ],
);

export const taskStatuses = ['working', 'input_required', 'completed', 'failed', 'cancelled'] as const;
export type TaskStatus = (typeof taskStatuses)[number];

/** How a task was started: a task-augmented tools/call, or a plain call the server made a task of. */
export const taskInvocations = ['task', 'call'] as const;
export type TaskInvocation = (typeof taskInvocations)[number];

export const tasks = sqliteTable(
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
    arguments: text('arguments', { mode: 'json' }).notNull().$type<Record<string, unknown>>(),
    status: text('status', { enum: taskStatuses }).notNull(),
    statusMessage: text('status_message'),
    createdAt: millis('created_at').notNull(),
    lastUpdatedAt: millis('last_updated_at').notNull(),
    ttlMs: integer('ttl_ms').notNull(),
    expiresAt: millis('expires_at').notNull(),
    pollIntervalMs: integer('poll_interval_ms').notNull(),
    progressToken: text('progress_token', { mode: 'json' }).$type<string | number>(),
    progress: real('progress'),
    progressTotal: real('progress_total'),
    progressMessage: text('progress_message'),
    /** What the tool published while it ran (ctx.output); its latest part once it grew past the bound. */
    partialOutput: text('partial_output'),
    /** The CallToolResult of a finished task, exactly as tools/call would have returned it. */
    result: text('result', { mode: 'json' }).$type<Record<string, unknown>>(),
    /** The JSON-RPC error of a task whose request failed, returned verbatim by tasks/result. */
    error: text('error', { mode: 'json' }).$type<{ code: number; message: string; data?: unknown }>(),
    attempt: integer('attempt').notNull().default(1),
    invocation: text('invocation', { enum: taskInvocations }).notNull().default('task'),
    /** The JSON-RPC id of the plain tools/call a task answers, so that notifications/cancelled finds it. */
    callRequestId: text('call_request_id', { mode: 'json' }).$type<string | number>(),
    /** The server instance whose process runs the task's tool (see TaskEngine: leases). */
    runner: text('runner'),
    /** Until when the runner holds the task; an active task past it is taken over by another instance. */
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

export const taskEvents = sqliteTable(
  'task_events',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
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

/** An approval is a person's yes or no to a call of an upstream tool: never asked of an MCP client. */
export const inputKinds = ['elicitation', 'sampling', 'approval'] as const;
export const inputStatuses = ['pending', 'answered', 'withdrawn'] as const;
export type InputStatus = (typeof inputStatuses)[number];

/**
 * A question a task asks its requestor (elicitation/create), a model call it needs (sampling/
 * createMessage), or a person's approval of the call it is about to make upstream. Keyed per task, so that a tool re-run after a restart finds its earlier question and
 * answer instead of asking again.
 */
export const taskInputs = sqliteTable(
  'task_inputs',
  {
    id: text('id').primaryKey(),
    taskId: text('task_id')
      .notNull()
      .references(() => tasks.id, { onDelete: 'cascade' }),
    userId: text('user_id').notNull(),
    key: text('key').notNull(),
    kind: text('kind', { enum: inputKinds }).notNull(),
    request: text('request', { mode: 'json' }).notNull().$type<Record<string, unknown>>(),
    status: text('status', { enum: inputStatuses }).notNull(),
    response: text('response', { mode: 'json' }).$type<Record<string, unknown>>(),
    answeredBy: text('answered_by'),
    answeredByLabel: text('answered_by_label'),
    /** The JSON-RPC id of the copy of the request the client answered; every other copy is withdrawn. */
    answeredVia: text('answered_via'),
    /** The requestor's own task, when it took the request as a task (task-augmented elicitation). */
    clientTaskId: text('client_task_id'),
    createdAt: millis('created_at').notNull(),
    answeredAt: millis('answered_at'),
  },
  (table) => [
    uniqueIndex('task_inputs_task_key_unique').on(table.taskId, table.key),
    index('task_inputs_user_status_idx').on(table.userId, table.status, table.createdAt),
  ],
);

/**
 * The authorization server's storage (oidc-provider's adapter): clients, grants, codes, tokens,
 * sessions and interactions, one row each. Rows are keyed by a SHA-256 of the provider's id, because
 * for codes and tokens that id is the secret itself; the payload never holds it either.
 */
export const oauthRecords = sqliteTable(
  'oauth_records',
  {
    model: text('model').notNull(),
    idHash: text('id_hash').notNull(),
    payload: text('payload', { mode: 'json' }).notNull().$type<Record<string, unknown>>(),
    grantId: text('grant_id'),
    uid: text('uid'),
    /** How a client came to exist: 'dynamic' (RFC 7591) or 'preregistered' (command line). */
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

export const clientRegistrations = ['metadata_document', 'dynamic', 'preregistered'] as const;
export type ClientRegistration = (typeof clientRegistrations)[number];

/** A person's "yes" to a client: remembered until they disconnect it, shown in Connected apps. */
export const oauthConsents = sqliteTable(
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

export const notificationEventTypes = ['task.input_required', 'task.completed', 'task.failed', 'task.cancelled', 'task.expired'] as const;
export type NotificationEventType = (typeof notificationEventTypes)[number];

/**
 * What a person may be told of: a task that waits on them or ended. Written in the transaction of the
 * change that caused it (the outbox); every channel reads it in order from its own cursor, so nothing
 * is lost to a restart. Not tied to the task row: an expired task's event outlives the task.
 */
export const notificationEvents = sqliteTable(
  'notification_events',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    userId: text('user_id').notNull(),
    taskId: text('task_id').notNull(),
    type: text('type', { enum: notificationEventTypes }).notNull(),
    /** What the message says: the task as it was then, and the question when there is one. */
    payload: text('payload', { mode: 'json' }).notNull().$type<Record<string, unknown>>(),
    createdAt: millis('created_at').notNull(),
  },
  (table) => [index('notification_events_user_idx').on(table.userId, table.id), index('notification_events_created_idx').on(table.createdAt)],
);

export const notificationChannels = ['webhook', 'email', 'push'] as const;
export type NotificationChannel = (typeof notificationChannels)[number];
export const notificationTargetStatuses = ['active', 'failing'] as const;
export type NotificationTargetOptions = { includeDetails?: boolean; browser?: string };

/**
 * Where events go: a webhook endpoint (a person's, or the operator's for every user when `userId` is
 * null), a person's e-mail, or one of their browsers' push subscriptions (the push service's endpoint,
 * its keys as JSON in `secret`). Each reads the outbox from its cursor and delivers at least once, in order.
 */
export const notificationTargets = sqliteTable(
  'notification_targets',
  {
    id: text('id').primaryKey(),
    userId: text('user_id').references(() => users.id, { onDelete: 'cascade' }),
    channel: text('channel', { enum: notificationChannels }).notNull(),
    /** The webhook's URL, the e-mail address, or the push subscription's endpoint. */
    address: text('address').notNull(),
    /** The webhook's signing secret (whsec_…). */
    secret: text('secret'),
    events: text('events', { mode: 'json' }).notNull().$type<NotificationEventType[]>(),
    /** E-mail: `includeDetails` puts the tool's arguments and the form's fields in the message; push: `browser` names it. */
    options: text('options', { mode: 'json' }).notNull().$type<NotificationTargetOptions>(),
    status: text('status', { enum: notificationTargetStatuses }).notNull(),
    /** The last event handled (delivered, or not for this target). */
    cursor: integer('cursor').notNull(),
    /** Failed attempts at the event after the cursor, and since when it has been failing. */
    attempts: integer('attempts').notNull().default(0),
    failingSince: millis('failing_since'),
    lastError: text('last_error'),
    nextAttemptAt: millis('next_attempt_at').notNull().default(0),
    /** The instance delivering now, and until when its claim holds. */
    leaseHolder: text('lease_holder'),
    leaseUntil: millis('lease_until'),
    /** The start of the current minute of messages, and how many went in it (the digest's budget). */
    windowStart: millis('window_start').notNull().default(0),
    sentInWindow: integer('sent_in_window').notNull().default(0),
    /**
     * Push: the person's session generation when the browser subscribed. Once their sessions end (sign
     * out everywhere, a new password), the browser is no longer theirs to tell: nothing is delivered to it.
     */
    sessionGeneration: integer('session_generation').notNull().default(0),
    createdAt: millis('created_at').notNull(),
  },
  (table) => [index('notification_targets_user_idx').on(table.userId), index('notification_targets_due_idx').on(table.status, table.nextAttemptAt)],
);

export const deliveryOutcomes = ['delivered', 'retrying', 'failed', 'refused'] as const;

/** Each attempt at a delivery, for the person's delivery log (the last ones are kept). */
export const notificationAttempts = sqliteTable(
  'notification_attempts',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    targetId: text('target_id')
      .notNull()
      .references(() => notificationTargets.id, { onDelete: 'cascade' }),
    /** The message id the receiver saw (webhook-id); a test event has its own. */
    messageId: text('message_id').notNull(),
    eventType: text('event_type').notNull(),
    /** How many events the message carried (more than one for a digest). */
    events: integer('events').notNull().default(1),
    attempt: integer('attempt').notNull(),
    at: millis('at').notNull(),
    outcome: text('outcome', { enum: deliveryOutcomes }).notNull(),
    statusCode: integer('status_code'),
    response: text('response'),
    error: text('error'),
    durationMs: integer('duration_ms').notNull(),
  },
  (table) => [index('notification_attempts_target_idx').on(table.targetId, table.id)],
);

/** How a person wants to be told, whatever the channel (webhooks excepted: they are for machines). */
export const notificationPreferences = sqliteTable('notification_preferences', {
  userId: text('user_id')
    .primaryKey()
    .references(() => users.id, { onDelete: 'cascade' }),
  /** 1: nothing by e-mail or push about a task whose client has a live connection (the person is at it). */
  quietWhileLive: integer('quiet_while_live').notNull().default(0),
  /** Messages per minute to each browser and e-mail at most; what comes beyond waits for one digest. */
  maxPerMinute: integer('max_per_minute').notNull(),
});
