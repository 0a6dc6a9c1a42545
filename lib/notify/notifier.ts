import type { Transporter } from 'nodemailer';
import { Webhook } from 'standardwebhooks';
import webpush from 'web-push';
import { createLimiter } from '@/db/limiter';
import {
  anyNotificationTargets,
  claimDueTargets,
  deleteNotificationTarget,
  deletePushTargetIfSessionEnded,
  finishDelivery,
  getNotificationPreferences,
  isEmailTargetVerified,
  ownerOf,
  pendingEventsOf,
  releaseNotificationClaims,
  recordDeliveryAttempt,
  type EventPayload,
  type NotificationEventRow,
  type NotificationTargetRow,
} from '@/db/queries/notifications';
import type { PrivateHost } from '@/lib/env';
import { topics, type EventBus } from '@/lib/tasks/bus';
import { composeEmail, pushMessage, testWebhookBody, webhookBody } from './messages';
import { postOutbound, RefusedAddressError } from './outbound';

interface NotifierConfig {
  instanceId: string;
  appUrl: string;
  privateHosts: readonly PrivateHost[];
  webhookTimeoutMs: number;
  retryBaseMs: number;
  retryWindowMs: number;
  /** E-mails per target per minute; what arrives beyond goes in one digest when the minute is over. */
  maxPerMinute: number;
  /** One process alone on its database (SQLite): claims left by a previous process are its own to end. */
  alone: boolean;
  mail?: { transport: Pick<Transporter, 'sendMail'>; from: string };
  vapid: { subject: string; publicKey: string; privateKey: string };
  /** Of these MCP sessions, the ones with a stream open now (on any instance): their clients are live. */
  liveSessions(sessionIds: string[]): Promise<string[]>;
}

/** What one attempt came to. */
interface Outcome {
  ok: boolean;
  /** Not worth retrying: the address may not be reached. */
  refused?: boolean;
  /** The push service forgot the subscription (404 or 410): it is removed. */
  gone?: boolean;
  statusCode?: number;
  response?: string;
  error?: string;
}

/**
 * Deliveries in flight at once on one instance, and at most so many of them for one person (or for the
 * operator's webhooks): each starts as soon as a place is free, so endpoints that answer slowly hold only
 * their owner's few places, never another person's deliveries.
 */
const deliveriesInFlight = 32;
const deliveriesInFlightPerOwner = 3;
/** "Send test event" presses a webhook takes a minute: a few are all a person needs to check an endpoint. */
const testEventsPerMinute = 5;
/** Events one e-mail digest carries at most. */
const digestSize = 20;
const minuteMs = 60_000;
/** How long a push service keeps a message for a browser that is offline: a day, like a task's default ttl. */
const pushTtlSeconds = 24 * 60 * 60;
/** How often due deliveries are looked for: those another instance put off, and targets another process added. */
const scanIntervalMs = 1_000;

/** Retries wait base, 4×, 16×… of NOTIFY_RETRY_BASE_MS, at most an hour, with a fifth of jitter. */
function retryDelayMs(attempts: number, baseMs: number): number {
  const delay = Math.min(baseMs * 4 ** Math.max(0, attempts - 1), 60 * minuteMs);
  return Math.round(delay * (0.9 + Math.random() * 0.2));
}

/**
 * Delivers the outbox to every target from its cursor: claims due targets (a lease, so that instances
 * sharing PostgreSQL do not deliver the same event together) into a pool of deliveries shared fairly
 * among their owners, sends, moves the cursor only once the receiver took it. A webhook gets one event at a time, in order; e-mail and push get what is pending,
 * as a digest when there are several. Failures retry with backoff; a webhook still failing after
 * NOTIFY_RETRY_WINDOW_MS is marked failing until its person resumes it.
 */
export class Notifier {
  /** Whether any target existed at the last scan (or was added here since). */
  private anyTargets = true;
  /** Claiming due targets now (a wake-up meanwhile makes it claim once more). */
  private running = false;
  private again = false;
  /** This instance's deliveries in flight, by owner (see ownerOf), and in all. */
  private readonly inFlight = new Map<string, number>();
  private inFlightCount = 0;
  private stopped = false;
  private readonly timer: NodeJS.Timeout;
  /** The wake-up for the earliest delivery this instance put off (a retry, a digest's minute), and when. */
  private dueTimer?: NodeJS.Timeout;
  private dueAt = Infinity;
  /** "Send test event" presses per webhook per minute, shared by the instances of one database. */
  private readonly testEvents = createLimiter({ keyPrefix: 'webhook-test-event', points: testEventsPerMinute, duration: 60 });

  constructor(
    private readonly config: NotifierConfig,
    bus: EventBus,
  ) {
    // Events are written with the changes that cause them; these are the changes that may have written one.
    // Where nobody has a target (most servers, most of the time) they wake nothing: no event was written.
    bus.subscribe(topics.allTasks, (event) => {
      if (!this.anyTargets) return;
      if ((event.type === 'task-changed' && event.transition) || event.type === 'input-changed' || event.type === 'task-deleted') this.wake();
    });
    this.timer = setInterval(() => void this.scan(), scanIntervalMs);
    this.timer.unref();
    if (config.alone) {
      this.running = true;
      void releaseNotificationClaims()
        .catch((error: unknown) => console.error('Releasing the claims of the last process failed; they end with their leases', error))
        .finally(() => {
          this.running = false;
          this.wake();
        });
    }
  }

  /**
   * Looks for due deliveries (retries, and targets another process added), and learns whether any target
   * exists at all: until one does, changes to tasks do not wake the notifier.
   */
  private async scan(): Promise<void> {
    try {
      this.anyTargets = await anyNotificationTargets();
    } catch (error) {
      console.error('Looking for notification targets failed', error);
      return;
    }
    if (this.anyTargets) this.wake();
  }

  /** A target was added here: deliver to it from the next change on, without waiting for a scan. */
  targetsChanged(): void {
    this.anyTargets = true;
  }

  /** Starts delivering what is due now, as places in the pool allow; a call while it claims makes it claim again. */
  wake(): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = true;
    this.again = false;
    void this.startDue()
      .catch((error: unknown) => console.error('Delivering notifications failed', error))
      .finally(() => {
        this.running = false;
        if (this.again) this.wake();
      });
  }

  stop(): void {
    this.stopped = true;
    clearInterval(this.timer);
    clearTimeout(this.dueTimer);
  }

  /**
   * Wakes the notifier at `at`, when a delivery it put off is due: a retry then waits the backoff it was
   * given, not until the scan after it (which finds those of other instances, or of a process that ended).
   */
  private wakeAt(at: number): void {
    if (this.stopped || at >= this.dueAt) return;
    clearTimeout(this.dueTimer);
    this.dueAt = at;
    const fire = () => {
      // Timers may fire a little before the wall clock, which is what decides what is due.
      const left = at - Date.now();
      if (left > 0) {
        this.dueTimer = setTimeout(fire, left);
        this.dueTimer.unref();
        return;
      }
      this.dueTimer = undefined;
      this.dueAt = Infinity;
      this.wake();
    };
    this.dueTimer = setTimeout(fire, Math.max(0, at - Date.now()));
    this.dueTimer.unref();
  }

  /** Claims due targets for the free places of the pool and starts their deliveries, without waiting for them. */
  private async startDue(): Promise<void> {
    // A claim outlives the longest delivery (an e-mail's connection and socket timeouts are the webhooks'),
    // so that a live instance never loses one mid-send.
    const leaseMs = this.config.webhookTimeoutMs * 2 + 5_000;
    while (!this.stopped) {
      const slots = deliveriesInFlight - this.inFlightCount;
      if (slots <= 0) return;
      const now = Date.now();
      const claimed = await claimDueTargets(this.config.instanceId, now, now + leaseMs, { slots, perOwner: deliveriesInFlightPerOwner, inFlight: this.inFlight });
      for (const target of claimed) this.start(target);
      // Fewer than the free places: nothing else is due, or its owner's places are taken (each delivery
      // that ends wakes the notifier again).
      if (claimed.length < slots) return;
    }
  }

  private start(target: NotificationTargetRow): void {
    const owner = ownerOf(target);
    this.inFlight.set(owner, (this.inFlight.get(owner) ?? 0) + 1);
    this.inFlightCount += 1;
    void this.serve(target).finally(() => {
      const left = this.inFlight.get(owner)! - 1;
      if (left === 0) this.inFlight.delete(owner);
      else this.inFlight.set(owner, left);
      this.inFlightCount -= 1;
      // Its place is free, and its target may have more events.
      this.wake();
    });
  }

  private async serve(target: NotificationTargetRow): Promise<void> {
    const holder = this.config.instanceId;
    try {
      const email = target.channel === 'email';
      // E-mail and push are for people: several pending events make one digest, within a budget per minute.
      const batched = target.channel !== 'webhook';
      if (email && !this.config.mail) {
        // E-mail was switched off by the operator: hold the events until it is back.
        await finishDelivery(target.id, holder, { nextAttemptAt: Date.now() + minuteMs });
        return;
      }
      if (email && !(await isEmailTargetVerified(target.id))) {
        // Nobody proved the address is the person's: the events wait until someone does (which makes it due).
        await finishDelivery(target.id, holder, { nextAttemptAt: Date.now() + 60 * minuteMs });
        return;
      }
      // A browser subscribed in sessions that have ended is not the person's to tell any more.
      if (target.channel === 'push' && (await deletePushTargetIfSessionEnded(target.id))) return;
      const { events: pending, scannedTo } = await pendingEventsOf(target, batched ? digestSize : 1);
      if (pending.length === 0) {
        await finishDelivery(target.id, holder, { cursor: scannedTo });
        return;
      }
      const preferences = batched && target.userId ? await getNotificationPreferences(target.userId) : undefined;
      const events = preferences?.quietWhileLive ? await this.notWatched(pending) : pending;
      if (events.length === 0) {
        await finishDelivery(target.id, holder, { cursor: scannedTo });
        return;
      }
      const now = Date.now();
      const window = now - target.windowStart < minuteMs ? { start: target.windowStart, sent: target.sentInWindow } : { start: now, sent: 0 };
      if (batched && window.sent >= (preferences?.maxPerMinute ?? this.config.maxPerMinute)) {
        if (await finishDelivery(target.id, holder, { nextAttemptAt: window.start + minuteMs })) this.wakeAt(window.start + minuteMs);
        return;
      }
      const started = Date.now();
      const messageId = batched ? `${target.channel}_${events[0].id}_${events.at(-1)!.id}` : `evt_${events[0].id}`;
      const outcome =
        target.channel === 'email'
          ? await this.sendEmail(target, events)
          : target.channel === 'push'
            ? await this.sendPush(target, events)
            : await this.sendWebhook(target, messageId, webhookBody(events[0], this.config.appUrl));
      const attempt = target.attempts + 1;
      const log = {
        targetId: target.id,
        messageId,
        eventType: batched && events.length > 1 ? 'digest' : events[0].type,
        events: events.length,
        attempt,
        at: started,
        statusCode: outcome.statusCode ?? null,
        response: outcome.response?.slice(0, 500) ?? null,
        error: outcome.error ?? null,
        durationMs: Date.now() - started,
      };
      if (outcome.ok) {
        await finishDelivery(
          target.id,
          holder,
          { cursor: scannedTo, attempts: 0, failingSince: null, lastError: null, nextAttemptAt: 0, windowStart: window.start, sentInWindow: window.sent + 1 },
          { ...log, outcome: 'delivered' },
        );
        return;
      }
      if (outcome.gone || (outcome.refused && target.channel === 'push')) {
        // The browser unsubscribed, its push service expired the subscription, or its endpoint now leads
        // somewhere this server may not go: nobody can be told there any more.
        await deleteNotificationTarget(target.id, target.userId);
        return;
      }
      const failingSince = target.failingSince ?? started;
      // A webhook is marked failing for its owner to fix and resume; e-mail keeps trying (hourly at most).
      const giveUp = target.channel === 'webhook' && (outcome.refused || Date.now() - failingSince >= this.config.retryWindowMs);
      const lastError = outcome.error ?? `HTTP ${outcome.statusCode}`;
      const retryAt = Date.now() + retryDelayMs(attempt, this.config.retryBaseMs);
      const finished = await finishDelivery(
        target.id,
        holder,
        giveUp ? { status: 'failing', attempts: attempt, failingSince, lastError } : { attempts: attempt, failingSince, lastError, nextAttemptAt: retryAt },
        { ...log, outcome: outcome.refused ? 'refused' : giveUp ? 'failed' : 'retrying' },
      );
      if (finished && !giveUp) this.wakeAt(retryAt);
    } catch (error) {
      console.error(`Delivering to notification target ${target.id} failed`, error);
    }
  }

  /**
   * The events whose task's client has no live connection now (the person is not at it), and every
   * approval: no client shows one, so the person is told of it wherever they are.
   */
  private async notWatched(events: NotificationEventRow[]): Promise<NotificationEventRow[]> {
    const sessionOf = (event: NotificationEventRow) => {
      const { task, question } = event.payload as unknown as EventPayload;
      return question?.approval ? null : (task.sessionId ?? null);
    };
    const sessions = [...new Set(events.map(sessionOf).filter((id): id is string => id !== null))];
    if (sessions.length === 0) return events;
    const live = new Set(await this.config.liveSessions(sessions));
    return events.filter((event) => !live.has(sessionOf(event) ?? ''));
  }

  private async sendWebhook(target: Pick<NotificationTargetRow, 'address' | 'secret'>, messageId: string, body: Record<string, unknown>): Promise<Outcome> {
    const payload = JSON.stringify(body);
    const timestamp = new Date();
    const signature = new Webhook(target.secret!).sign(messageId, timestamp, payload);
    try {
      const response = await postOutbound(
        target.address,
        payload,
        { 'webhook-id': messageId, 'webhook-timestamp': String(Math.floor(timestamp.getTime() / 1000)), 'webhook-signature': signature },
        { timeoutMs: this.config.webhookTimeoutMs, privateHosts: this.config.privateHosts },
      );
      const ok = response.status >= 200 && response.status < 300;
      return { ok, statusCode: response.status, response: response.body ?? undefined, ...(ok ? {} : { error: `HTTP ${response.status}` }) };
    } catch (error) {
      return { ok: false, refused: error instanceof RefusedAddressError, error: error instanceof Error ? error.message : String(error) };
    }
  }

  private async sendPush(target: NotificationTargetRow, events: NotificationEventRow[]): Promise<Outcome> {
    try {
      const request = webpush.generateRequestDetails(
        { endpoint: target.address, keys: JSON.parse(target.secret!) as { p256dh: string; auth: string } },
        JSON.stringify(pushMessage(events, this.config.appUrl)),
        { vapidDetails: this.config.vapid, TTL: pushTtlSeconds, urgency: 'high', contentEncoding: 'aes128gcm' },
      );
      const response = await postOutbound(request.endpoint, request.body, request.headers as Record<string, string>, {
        timeoutMs: this.config.webhookTimeoutMs,
        privateHosts: this.config.privateHosts,
      });
      const ok = response.status >= 200 && response.status < 300;
      return { ok, gone: response.status === 404 || response.status === 410, statusCode: response.status, response: response.body ?? undefined, ...(ok ? {} : { error: `HTTP ${response.status}` }) };
    } catch (error) {
      return { ok: false, refused: error instanceof RefusedAddressError, error: error instanceof Error ? error.message : String(error) };
    }
  }

  private async sendEmail(target: NotificationTargetRow, events: NotificationEventRow[]): Promise<Outcome> {
    const mail = this.config.mail!;
    const message = composeEmail(events, this.config.appUrl, target.options.includeDetails === true);
    try {
      const info = (await mail.transport.sendMail({ from: mail.from, to: target.address, subject: message.subject, text: message.text })) as { response?: string };
      return { ok: true, response: info.response };
    } catch (error) {
      return { ok: false, error: error instanceof Error ? error.message : String(error) };
    }
  }

  /**
   * "Send test event": one signed delivery now, outside the outbox, logged like the others. The button
   * makes this server call out, so a webhook gets a few a minute, each counted before it is sent.
   */
  async sendTestEvent(target: NotificationTargetRow): Promise<{ ok: boolean; detail: string } | { limited: true; perMinute: number }> {
    const admitted = await this.testEvents.consume(target.id).then(
      () => true,
      (rejection: unknown) => {
        if (rejection instanceof Error) throw rejection;
        return false;
      },
    );
    if (!admitted) return { limited: true, perMinute: testEventsPerMinute };
    const messageId = `test_${crypto.randomUUID()}`;
    const started = Date.now();
    const outcome = await this.sendWebhook(target, messageId, testWebhookBody(this.config.appUrl));
    await recordDeliveryAttempt({
      targetId: target.id,
      messageId,
      eventType: 'webhook.test',
      events: 1,
      attempt: 1,
      at: started,
      outcome: outcome.ok ? 'delivered' : outcome.refused ? 'refused' : 'failed',
      statusCode: outcome.statusCode ?? null,
      response: outcome.response?.slice(0, 500) ?? null,
      error: outcome.error ?? null,
      durationMs: Date.now() - started,
    });
    return { ok: outcome.ok, detail: outcome.ok ? `HTTP ${outcome.statusCode}` : (outcome.error ?? 'failed') };
  }
}
