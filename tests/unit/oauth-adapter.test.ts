import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'oauth-adapter-'));
process.env.DATABASE_PATH = path.join(dataDir, 'app.db');

const { SqliteAdapter } = await import('@/lib/auth/oauth/adapter');
const { getDb } = await import('@/db/client');

afterAll(() => {
  getDb().$client.close();
  fs.rmSync(dataDir, { recursive: true, force: true });
});

class Reused extends Error {}

/** Two instances of the server sharing the database each have their own adapter. */
const instance = (model: string) => new SqliteAdapter(model, { reuseError: () => new Reused('already used'), unusedClientTtlSeconds: 3600 });

describe('single use of codes and refresh tokens', () => {
  it.each([['AuthorizationCode'], ['RefreshToken']])('lets one of two %s redemptions that both read it unused win; the other is a reuse that ends the grant', async (model) => {
    const grantId = `grant-${model}`;
    await instance('Grant').upsert(grantId, { accountId: 'u1', clientId: 'c1' }, 3600);
    await instance(model).upsert(`${model}-secret`, { grantId, clientId: 'c1' }, 60);
    await instance('AccessToken').upsert(`${model}-access`, { grantId, clientId: 'c1' }, 3600);

    const [first, second] = [instance(model), instance(model)];
    // Both requests load it before either consumes it: each sees it unused.
    expect((await first.find(`${model}-secret`))?.consumed).toBeUndefined();
    expect((await second.find(`${model}-secret`))?.consumed).toBeUndefined();

    const outcomes = await Promise.allSettled([first.consume(`${model}-secret`), second.consume(`${model}-secret`)]);
    expect(outcomes.map((outcome) => outcome.status).sort()).toEqual(['fulfilled', 'rejected']);
    expect((outcomes.find((outcome) => outcome.status === 'rejected') as PromiseRejectedResult).reason).toBeInstanceOf(Reused);
    expect(await instance('Grant').find(grantId)).toBeUndefined();
    expect(await instance('AccessToken').find(`${model}-access`)).toBeUndefined();
  });
});
