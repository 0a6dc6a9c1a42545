import { and, asc, desc, eq, gt, inArray, isNotNull, isNull, lt, lte, max, ne, notInArray, or, sql, type SQL } from 'drizzle-orm';
import { changes, defineQuery, first, lock, preparedQuery, rows, type Program, type QueryContext } from '../run';
import type { notificationAttempts, notificationEvents, NotificationEventType, notificationPreferences, notificationTargets, TaskStatus } from '../schema';
import type { TaskRow } from './tasks';

export type NotificationEventRow = typeof notificationEvents.$inferSelect;
export type NotificationTargetRow = typeof notificationTargets.$inferSelect;
export type NotificationAttemptRow = typeof notificationAttempts.$inferSelect;

/** The task as an event tells of it: enough to write the message after the task itself is gone. */
export interface EventTask {
  id: string;
  /** The MCP session that started it (2025-11-25 clients): live while it has a stream open. */
  sessionId?: string | null;
  tool: string;
  status: TaskStatus;
  statusMessage: string | null;
  client: { name: string | null; version: string | null };
  protocolVersion: string | null;
  createdAt: number;
  arguments: Record<string, unknown>;
}

/** The question of a task.input_required event, as the person is asked it in the dashboard. */
export interface EventQuestion {
  inputId: string;
  key: string;
  message: string;
  /** The form's fields: name, title and JSON Schema type (with its choices, when it has them). */
  fields: Array<{ name: string; title: string | null; type: string; choices?: string[] }>;
  /**
   * For an approval: the server and the tool whose call waits for a person (never its arguments, which
   * only the dashboard shows). A client cannot answer it, so it is told even while the client is live.
   */
  approval?: { server: string; tool: string };
}

export interface EventPayload {
  task: EventTask;
  question?: EventQuestion;
}

export function eventTask(task: TaskRow, status: TaskStatus = task.status): EventTask {
  return {
    id: task.id,
    sessionId: task.sessionId,
    tool: task.toolName,
    status,
    statusMessage: task.statusMessage,
    client: { name: task.clientName, version: task.clientVersion },
    protocolVersion: task.protocolVersion,
    createdAt: task.createdAt,
    arguments: task.arguments,
  };
}

const endEvents: Partial<Record<TaskStatus, NotificationEventType>> = {
  completed: 'task.completed',
  failed: 'task.failed',
  cancelled: 'task.cancelled',
};

/** The event a transition to this status is, if any. */
export function endEventOf(status: TaskStatus): NotificationEventType | undefined {
  return endEvents[status];
}

/** The newest event's id (0 with none): where a new target starts, so that it is told only of what follows. */
function* latestEventId(q: QueryContext): Program<number> {
  const row = yield* first(q.db.select({ id: max(q.t.notificationEvents.id) }).from(q.t.notificationEvents));
  return Number(row?.id ?? 0);
}

export const createNotificationTarget = defineQuery(
  function* (
    q,
    target: Pick<NotificationTargetRow, 'userId' | 'channel' | 'address' | 'secret' | 'events' | 'options'> & Partial<Pick<NotificationTargetRow, 'sessionGeneration'>>,
  ): Program<NotificationTargetRow> {
    const cursor = yield* latestEventId(q);
    return (yield* first(
      q.db
        .insert(q.t.notificationTargets)
        .values({ ...target, id: crypto.randomUUID(), status: 'active', cursor, createdAt: Date.now() })
        .returning(),
    ))!;
  },
  { transaction: 'immediate' },
);

/** A person's targets, or the operator's (every user's) with `null`. */
export const listNotificationTargets = defineQuery(function* (q, userId: string | null): Program<NotificationTargetRow[]> {
  const { notificationTargets: targets } = q.t;
  return yield* rows(
    q.db
      .select()
      .from(targets)
      .where(userId === null ? isNull(targets.userId) : eq(targets.userId, userId))
      .orderBy(asc(targets.createdAt)),
  );
});

function owned(q: QueryContext, id: string, userId: string | null) {
  const { notificationTargets: targets } = q.t;
  return and(eq(targets.id, id), userId === null ? isNull(targets.userId) : eq(targets.userId, userId));
}

export const getNotificationTarget = defineQuery(function* (q, id: string, userId: string | null): Program<NotificationTargetRow | undefined> {
  return yield* first(q.db.select().from(q.t.notificationTargets).where(owned(q, id, userId)));
});

export const deleteNotificationTarget = defineQuery(function* (q, id: string, userId: string | null): Program<boolean> {
  return (yield* changes(q.db.delete(q.t.notificationTargets).where(owned(q, id, userId)))) > 0;
});

/**
 * Everywhere the person is told (webhooks, browsers, e-mail) and how (preferences): someone who held the
 * account may have set any of them up to be told of the owner's tasks.
 */
export const deleteNotificationSetupByUserId = defineQuery(function* (q, userId: string): Program<number> {
  const removed = yield* changes(q.db.delete(q.t.notificationTargets).where(eq(q.t.notificationTargets.userId, userId)));
  yield* changes(q.db.delete(q.t.notificationPreferences).where(eq(q.t.notificationPreferences.userId, userId)));
  return removed;
});

/** The push targets of the user's ended sessions (made under an older session generation). */
function* pushTargetsOfEndedSessions(q: QueryContext, where: SQL | undefined): Program<string[]> {
  const { notificationTargets: targets, users } = q.t;
  const found = yield* rows(
    q.db
      .select({ id: targets.id })
      .from(targets)
      .innerJoin(users, eq(users.id, targets.userId))
      .where(and(eq(targets.channel, 'push'), ne(targets.sessionGeneration, users.sessionGeneration), where)),
  );
  return found.map((row) => row.id);
}

/** Forgets the browsers subscribed in sessions of the user that have ended: they are not the person's any more. */
export const deletePushTargetsOfEndedSessions = defineQuery(function* (q, userId: string): Program<number> {
  const ids = yield* pushTargetsOfEndedSessions(q, eq(q.t.notificationTargets.userId, userId));
  if (ids.length === 0) return 0;
  return yield* changes(q.db.delete(q.t.notificationTargets).where(inArray(q.t.notificationTargets.id, ids)));
});

/**
 * Removes the push target when the session it was subscribed in has ended; true when it was removed.
 * Checked before each push, so a browser subscribed just as its sessions ended is not told either.
 */
export const deletePushTargetIfSessionEnded = defineQuery(
  function* (q, id: string): Program<boolean> {
    const ids = yield* pushTargetsOfEndedSessions(q, eq(q.t.notificationTargets.id, id));
    if (ids.length === 0) return false;
    return (yield* changes(q.db.delete(q.t.notificationTargets).where(inArray(q.t.notificationTargets.id, ids)))) > 0;
  },
  { transaction: 'immediate' },
);

/** Removes the user's subscription of one browser, known by its push endpoint (signing out of that browser). */
export const deletePushTargetByAddress = defineQuery(function* (q, userId: string, address: string): Program<boolean> {
  const { notificationTargets: targets } = q.t;
  return (yield* changes(q.db.delete(targets).where(and(eq(targets.userId, userId), eq(targets.channel, 'push'), eq(targets.address, address))))) > 0;
});

/** Removes every subscription of one browser, whoever made it: a browser is told of one person's tasks at most. */
export const deletePushTargetsByAddress = defineQuery(function* (q, address: string): Program<number> {
  const { notificationTargets: targets } = q.t;
  return yield* changes(q.db.delete(targets).where(and(eq(targets.channel, 'push'), eq(targets.address, address))));
});

/** Whether the e-mail target goes to its person's proved address: nothing is mailed to an address nobody proved. */
export const isEmailTargetVerified = defineQuery(function* (q, id: string): Program<boolean> {
  const { notificationTargets: targets, users } = q.t;
  const found = yield* first(
    q.db
      .select({ id: targets.id })
      .from(targets)
      .innerJoin(users, and(eq(users.id, targets.userId), eq(users.verifiedEmail, targets.address)))
      .where(eq(targets.id, id)),
  );
  return found !== undefined;
});

/** Makes the user's e-mail due now: its address was just proved, and the events held for it may go. */
export function* resumeEmailTargetOf(q: QueryContext, userId: string): Program<void> {
  const { notificationTargets: targets } = q.t;
  yield* changes(q.db.update(targets).set({ nextAttemptAt: 0 }).where(and(eq(targets.userId, userId), eq(targets.channel, 'email'))));
}

/** Changes what a target is told of (and, for e-mail, whether details are included). */
export const updateNotificationTarget = defineQuery(function* (
  q,
  id: string,
  userId: string | null,
  change: Partial<Pick<NotificationTargetRow, 'events' | 'options'>>,
): Program<boolean> {
  return (yield* changes(q.db.update(q.t.notificationTargets).set(change).where(owned(q, id, userId)))) > 0;
});

/** A failing target tried again from the event it failed on. */
export const resumeNotificationTarget = defineQuery(function* (q, id: string, userId: string | null): Program<boolean> {
  return (
    (yield* changes(
      q.db
        .update(q.t.notificationTargets)
        .set({ status: 'active', attempts: 0, failingSince: null, nextAttemptAt: 0, leaseHolder: null, leaseUntil: null })
        .where(and(owned(q, id, userId), eq(q.t.notificationTargets.status, 'failing'))),
    )) > 0
  );
});

/** Whether there is any target at all, failing ones included (they may be resumed). */
export const anyNotificationTargets = defineQuery(function* (q): Program<boolean> {
  return (yield* first(q.db.select({ id: q.t.notificationTargets.id }).from(q.t.notificationTargets).limit(1))) !== undefined;
});

/** How many of the person's own webhooks are failing: the dashboard says so on every page. */
export const countFailingWebhooks = defineQuery(function* (q, userId: string): Program<number> {
  const { notificationTargets: targets } = q.t;
  const found = yield* rows(
    q.db
      .select({ id: targets.id })
      .from(targets)
      .where(and(eq(targets.userId, userId), eq(targets.channel, 'webhook'), eq(targets.status, 'failing'))),
  );
  return found.length;
});

/** Whose a target is, for sharing deliveries fairly: its person's id, or the operator's (every user's) key. */
export function ownerOf(target: Pick<NotificationTargetRow, 'userId'>): string {
  return target.userId ?? operatorOwner;
}

/** The operator's targets share one owner; no person's id is empty. */
const operatorOwner = '';

/** How many deliveries a claim may start, and how they are shared among owners. */
export interface ClaimShare {
  /** Free places in the claiming instance's pool. */
  slots: number;
  /** At most this many deliveries of one owner in flight at once. */
  perOwner: number;
  /** The claiming instance's deliveries in flight now, by owner. */
  inFlight: ReadonlyMap<string, number>;
}

/**
 * Claims due targets that have events after their cursor, for `holder` until `leaseUntil` (an instance
 * that dies mid-delivery loses its claim when the lease runs out): at most `slots`, and no owner beyond
 * `perOwner` in flight, taking every owner's earliest due target before anyone's second, so that one
 * person's many (or slow) endpoints never hold back another person's deliveries.
 */
export const claimDueTargets = defineQuery(
  function* (q, holder: string, now: number, leaseUntil: number, share: ClaimShare): Program<NotificationTargetRow[]> {
    const { notificationTargets: targets } = q.t;
    const newest = yield* latestEventId(q);
    if (newest === 0 || share.slots <= 0) return [];
    const due = and(
      eq(targets.status, 'active'),
      lte(targets.nextAttemptAt, now),
      lt(targets.cursor, newest),
      or(isNull(targets.leaseUntil), lt(targets.leaseUntil, now)),
    );
    const full = [...share.inFlight].filter(([, count]) => count >= share.perOwner).map(([owner]) => owner);
    const fullPeople = full.filter((owner) => owner !== operatorOwner);
    const notFull = and(
      full.includes(operatorOwner) ? isNotNull(targets.userId) : undefined,
      fullPeople.length > 0 ? or(isNull(targets.userId), notInArray(targets.userId, fullPeople)) : undefined,
    );
    const ranked = q.db.$with('ranked').as(
      q.db
        .select({
          id: targets.id,
          userId: targets.userId,
          nextAttemptAt: targets.nextAttemptAt,
          place: sql<number>`row_number() over (partition by ${targets.userId} order by ${targets.nextAttemptAt}, ${targets.id})`.as('place'),
        })
        .from(targets)
        .where(and(due, notFull)),
    );
    // Every owner's first due target, then every owner's second…: enough rows for `slots` even when the
    // owners with some deliveries in flight may take fewer than `perOwner` more.
    const candidates = yield* rows(
      q.db
        .with(ranked)
        .select({ id: ranked.id, userId: ranked.userId })
        .from(ranked)
        .where(lte(ranked.place, share.perOwner))
        .orderBy(asc(ranked.place), asc(ranked.nextAttemptAt))
        .limit(share.slots * share.perOwner),
    );
    const taken = new Map(share.inFlight);
    const ids: string[] = [];
    for (const candidate of candidates) {
      if (ids.length === share.slots) break;
      const owner = ownerOf(candidate);
      const inFlight = taken.get(owner) ?? 0;
      if (inFlight >= share.perOwner) continue;
      taken.set(owner, inFlight + 1);
      ids.push(candidate.id);
    }
    if (ids.length === 0) return [];
    // The condition again: on PostgreSQL another instance may have claimed one since the select.
    return yield* rows(
      q.db
        .update(targets)
        .set({ leaseHolder: holder, leaseUntil })
        .where(and(inArray(targets.id, ids), due))
        .returning(),
    );
  },
  { transaction: 'immediate' },
);

/** Ends every claim: one process alone on its SQLite file at start, when no other can be delivering. */
export const releaseNotificationClaims = defineQuery(function* (q): Program<number> {
  return yield* changes(q.db.update(q.t.notificationTargets).set({ leaseHolder: null, leaseUntil: null }));
});

/**
 * The events after the target's cursor that it is told of, oldest first, and how far its cursor may move
 * once they are handled. The newest id is read first and the events only up to it: an event committed
 * between the two reads is left for the next, never passed over. Events commit in the order of their ids
 * (see `notify`), so every event up to the newest one seen is there to be read.
 */
export const pendingEventsOf = defineQuery(function* (
  q,
  target: Pick<NotificationTargetRow, 'userId' | 'cursor' | 'events'>,
  limit: number,
): Program<{ events: NotificationEventRow[]; scannedTo: number }> {
  const { notificationEvents: events } = q.t;
  const newest = yield* latestEventId(q);
  if (newest <= target.cursor) return { events: [], scannedTo: target.cursor };
  const mine = target.userId === null ? undefined : eq(events.userId, target.userId);
  const wanted = target.events.length > 0 ? inArray(events.type, target.events) : sql`false`;
  const found = yield* rows(
    q.db
      .select()
      .from(events)
      .where(and(gt(events.id, target.cursor), lte(events.id, newest), mine, wanted))
      .orderBy(asc(events.id))
      .limit(limit),
  );
  // With fewer than asked for, every event up to the newest was looked at: the others are not for this target.
  return { events: found, scannedTo: found.length < limit ? newest : found.at(-1)!.id };
});

/**
 * Ends a delivery of `holder`'s claim: moves the cursor, counts the failure or clears it, releases the
 * claim, and logs the attempt, in one transaction. Changes nothing when the claim was lost (the target was
 * removed or resumed meanwhile).
 */
export const finishDelivery = defineQuery(
  function* (
    q,
    id: string,
    holder: string,
    change: Partial<Pick<NotificationTargetRow, 'cursor' | 'attempts' | 'failingSince' | 'lastError' | 'nextAttemptAt' | 'status' | 'windowStart' | 'sentInWindow'>>,
    attempt?: Omit<NotificationAttemptRow, 'id'>,
  ): Program<boolean> {
    const { notificationTargets: targets } = q.t;
    const held = yield* changes(
      q.db
        .update(targets)
        .set({ ...change, leaseHolder: null, leaseUntil: null })
        .where(and(eq(targets.id, id), eq(targets.leaseHolder, holder))),
    );
    if (held > 0 && attempt) yield* logAttempt(q, attempt);
    return held > 0;
  },
  { transaction: 'immediate' },
);

/** The delivery log keeps this many attempts per target. */
const attemptsKept = 50;

/** Logs an attempt that moved no cursor ("Send test event"). */
export const recordDeliveryAttempt = defineQuery((q, attempt: Omit<NotificationAttemptRow, 'id'>) => logAttempt(q, attempt), { transaction: 'immediate' });

function* logAttempt(q: QueryContext, attempt: Omit<NotificationAttemptRow, 'id'>): Program<void> {
  const { notificationAttempts: attempts } = q.t;
  yield* changes(q.db.insert(attempts).values(attempt));
  const keepFrom = yield* first(
    q.db
      .select({ id: attempts.id })
      .from(attempts)
      .where(eq(attempts.targetId, attempt.targetId))
      .orderBy(desc(attempts.id))
      .limit(1)
      .offset(attemptsKept - 1),
  );
  if (keepFrom) yield* changes(q.db.delete(attempts).where(and(eq(attempts.targetId, attempt.targetId), lt(attempts.id, keepFrom.id))));
}

export const listDeliveryAttempts = defineQuery(function* (q, targetId: string, limit: number): Program<NotificationAttemptRow[]> {
  const { notificationAttempts: attempts } = q.t;
  return yield* rows(q.db.select().from(attempts).where(eq(attempts.targetId, targetId)).orderBy(desc(attempts.id)).limit(limit));
});

/** Forgets events older than the retention; a target failing for longer misses them. */
export const deleteOldNotificationEvents = defineQuery(function* (q, before: number): Program<number> {
  return yield* changes(q.db.delete(q.t.notificationEvents).where(lt(q.t.notificationEvents.createdAt, before)));
});

/** Whether anyone listens to a person's events: every task that ends asks. */
const selectListeningTarget = preparedQuery((q) => {
  const { notificationTargets: targets } = q.t;
  return q.db
    .select({ id: targets.id })
    .from(targets)
    .where(or(eq(targets.userId, sql.placeholder('userId')), isNull(targets.userId)))
    .limit(1);
});

/**
 * Writes the event into the outbox, inside the caller's transaction, when someone is to be told of it:
 * the user has a target, or the operator has one for every user. A target starts after the newest
 * event, so an event nobody could be told of is not kept.
 */
export function* notify(q: QueryContext, type: NotificationEventType, userId: string, payload: EventPayload, now = Date.now()): Program<void> {
  const listening = yield* first(selectListeningTarget(q), { userId });
  if (!listening) return;
  // Events commit in the order of their ids (PostgreSQL hands ids out before commit): a reader that sees
  // one has seen every earlier one, so moving a cursor past what it read skips nothing still to come.
  yield* lock(q, 'notification-events');
  yield* changes(q.db.insert(q.t.notificationEvents).values({ userId, taskId: payload.task.id, type, payload: payload as unknown as Record<string, unknown>, createdAt: now }));
}

/**
 * A question as an event tells it: a form's message and its fields' names, titles and types; an
 * approval's server and tool.
 */
export function questionOf(input: { id: string; key: string; kind: string; request: Record<string, unknown> }): EventQuestion {
  if (input.kind === 'approval') {
    const server = String(input.request.server ?? '');
    const tool = String(input.request.tool ?? '');
    return { inputId: input.id, key: input.key, message: `Approve ${tool} on ${server}?`, fields: [], approval: { server, tool } };
  }
  const request = input.request as { message?: unknown; requestedSchema?: { properties?: Record<string, Record<string, unknown>> } };
  const properties = request.requestedSchema?.properties ?? {};
  return {
    inputId: input.id,
    key: input.key,
    message: typeof request.message === 'string' ? request.message : '',
    fields: Object.entries(properties).map(([name, schema]) => {
      const choices = Array.isArray(schema.enum) ? schema.enum.map(String) : Array.isArray(schema.oneOf) ? schema.oneOf.map((option) => String((option as { const?: unknown }).const)) : undefined;
      return { name, title: typeof schema.title === 'string' ? schema.title : null, type: String(schema.type ?? 'string'), ...(choices ? { choices } : {}) };
    }),
  };
}

export type NotificationPreferencesRow = typeof notificationPreferences.$inferSelect;

export const getNotificationPreferences = defineQuery(function* (q, userId: string): Program<NotificationPreferencesRow | undefined> {
  return yield* first(q.db.select().from(q.t.notificationPreferences).where(eq(q.t.notificationPreferences.userId, userId)));
});

export const setNotificationPreferences = defineQuery(function* (q, preferences: NotificationPreferencesRow): Program<void> {
  const { notificationPreferences: table } = q.t;
  yield* changes(
    q.db
      .insert(table)
      .values(preferences)
      .onConflictDoUpdate({ target: table.userId, set: { quietWhileLive: preferences.quietWhileLive, maxPerMinute: preferences.maxPerMinute } }),
  );
});
