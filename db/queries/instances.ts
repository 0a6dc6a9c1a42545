import { sql } from 'drizzle-orm';
import { changed, defineQuery, lock, selected, type Program } from '../run';

/**
 * What instances sharing PostgreSQL agree on at start: the signing secret generated for those started
 * without AUTH_SECRET (`generated_secret`, one row), and who is running with which secret (`instances`,
 * one row per instance, holding a keyed fingerprint of its secret, never the secret). Both tables exist
 * on PostgreSQL only (drizzle-pg/0010_instances_and_generated_secret.sql), like `open_streams`: one
 * process on SQLite keeps its generated secret in a file beside the database. Hence plain SQL here. An
 * instance row counts until its `expires_at` (milliseconds since the epoch): its instance renews it while
 * it runs, so a row left by one that died stops counting on its own.
 */

/**
 * The generated secret every instance started without AUTH_SECRET signs with: the one stored, or else
 * `candidate`, stored now. Under a lock, so that instances starting together store one and all read it.
 */
export const getOrCreateGeneratedSecret = defineQuery(
  function* (q, candidate: string, now: number): Program<string> {
    yield* lock(q, 'generated secret');
    const [stored] = yield* selected<{ secret: string }>(q, sql`select secret from generated_secret where id = 1`);
    if (stored) return stored.secret;
    yield* changed(q, sql`insert into generated_secret (id, secret, created_at) values (1, ${candidate}, ${now})`);
    return candidate;
  },
  { transaction: 'immediate' },
);

export interface InstanceRow {
  id: string;
  secretFingerprint: string;
  startedAt: number;
  expiresAt: number;
}

/**
 * Adds this instance to those running, unless a running one (its row not expired at `now`) signs with
 * another secret. Resolves with how many running instances have another fingerprint: 0 means this one
 * was added. Rows that expired are deleted on the way. Under a lock, so that two instances starting
 * together with different secrets cannot both be added.
 */
export const insertInstanceUnlessSecretDiffers = defineQuery(
  function* (q, instance: InstanceRow, now: number): Program<number> {
    yield* lock(q, 'instances');
    yield* changed(q, sql`delete from instances where expires_at <= ${now}`);
    const [{ differing }] = yield* selected<{ differing: number }>(
      q,
      sql`select count(*) as differing from instances where secret_fingerprint <> ${instance.secretFingerprint} and id <> ${instance.id}`,
    );
    if (differing > 0) return differing;
    yield* changed(
      q,
      sql`insert into instances (id, secret_fingerprint, started_at, expires_at)
          values (${instance.id}, ${instance.secretFingerprint}, ${instance.startedAt}, ${instance.expiresAt})
          on conflict (id) do update set secret_fingerprint = excluded.secret_fingerprint, expires_at = excluded.expires_at`,
    );
    return 0;
  },
  { transaction: 'immediate' },
);

/**
 * Keeps this instance counted until `expiresAt`. Its row comes back if it was deleted as expired while
 * the database was out of reach: the instance still runs with that secret.
 */
export const renewInstance = defineQuery(function* (q, instance: InstanceRow): Program<number> {
  return yield* changed(
    q,
    sql`insert into instances (id, secret_fingerprint, started_at, expires_at)
        values (${instance.id}, ${instance.secretFingerprint}, ${instance.startedAt}, ${instance.expiresAt})
        on conflict (id) do update set expires_at = excluded.expires_at`,
  );
});

/** This instance stops: it no longer holds back a change of secret. */
export const deleteInstanceById = defineQuery(function* (q, id: string): Program<number> {
  return yield* changed(q, sql`delete from instances where id = ${id}`);
});
