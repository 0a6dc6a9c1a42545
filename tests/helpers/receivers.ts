import { createDecipheriv, createECDH, hkdfSync, randomBytes, type ECDH } from 'node:crypto';
import http from 'node:http';
import { performance } from 'node:perf_hooks';
import { importJWK, jwtVerify, type JWTPayload } from 'jose';
import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';

export interface ReceivedRequest {
  path: string;
  headers: Record<string, string>;
  body: string;
  /** When it arrived (performance.now() of this process). */
  at: number;
}

/** How a receiver answers one request: a status, after an optional wait, or once `after` settles. */
export type Answer = { status: number; delayMs?: number; after?: Promise<unknown> };

/**
 * A webhook receiver on a loopback port: records every request, answers each path as told (200 by
 * default), in the order the requests arrive.
 */
export class WebhookReceiver {
  readonly requests: ReceivedRequest[] = [];
  private readonly answers = new Map<string, (attempt: number) => Answer>();
  private server?: http.Server;
  port = 0;

  async start(port = 0): Promise<void> {
    this.server = http.createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        const path = request.url ?? '/';
        const received = {
          path,
          headers: Object.fromEntries(Object.entries(request.headers).map(([name, value]) => [name, String(value)])),
          body: Buffer.concat(chunks).toString('utf8'),
          at: performance.now(),
        };
        this.requests.push(received);
        const attempt = this.requests.filter((entry) => entry.path === path).length;
        const answer = this.answers.get(path)?.(attempt) ?? { status: 200 };
        const respond = () => {
          if (response.destroyed) return;
          response.writeHead(answer.status, { 'content-type': 'text/plain' });
          response.end(answer.status < 300 ? 'ok' : `refused with ${answer.status}`);
        };
        if (answer.after) void answer.after.then(respond);
        else setTimeout(respond, answer.delayMs ?? 0);
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(port, '127.0.0.1', resolve));
    this.port = (this.server.address() as AddressInfo).port;
  }

  url(path: string): string {
    return `http://127.0.0.1:${this.port}${path}`;
  }

  /** How requests to `path` are answered, by their count at that path (1 for the first). */
  answer(path: string, how: (attempt: number) => Answer): void {
    this.answers.set(path, how);
  }

  at(path: string): ReceivedRequest[] {
    return this.requests.filter((request) => request.path === path);
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}

export interface ReceivedMail {
  from: string;
  to: string[];
  raw: string;
}

/** A local SMTP server that keeps every message; `refusing` makes it refuse messages with a 451. */
export class MailSink {
  readonly messages: ReceivedMail[] = [];
  refusing = false;
  private server?: SMTPServer;
  port = 0;

  async start(): Promise<void> {
    this.server = new SMTPServer({
      authOptional: true,
      disabledCommands: ['STARTTLS', 'AUTH'],
      logger: false,
      onData: (stream, session, callback) => {
        const chunks: Buffer[] = [];
        stream.on('data', (chunk: Buffer) => chunks.push(chunk));
        stream.on('end', () => {
          if (this.refusing) return callback(Object.assign(new Error('Try again later'), { responseCode: 451 }));
          this.messages.push({
            from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
            to: session.envelope.rcptTo.map((rcpt) => rcpt.address),
            raw: Buffer.concat(chunks).toString('utf8'),
          });
          callback();
        });
      },
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.server.address() as AddressInfo).port;
  }

  async stop(): Promise<void> {
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}

/** A message's decoded subject and text body (quoted-printable soft breaks undone). */
export function readMail(raw: string): { subject: string; text: string } {
  const [head, ...rest] = raw.split(/\r?\n\r?\n/);
  const unfolded = head.replace(/\r?\n[ \t]+/g, ' ');
  const encodedSubject = /^Subject: (.*)$/m.exec(unfolded)?.[1] ?? '';
  const subject = encodedSubject.replace(/=\?utf-8\?([QB])\?(.*?)\?=\s*/gi, (_match, kind: string, text: string) =>
    kind.toUpperCase() === 'B' ? Buffer.from(text, 'base64').toString('utf8') : decodeQuotedPrintable(text.replace(/_/g, ' ')),
  );
  const body = rest.join('\n\n');
  const text = /Content-Transfer-Encoding: quoted-printable/i.test(head) ? decodeQuotedPrintable(body.replace(/=\r?\n/g, '')) : body;
  return { subject, text };
}

function decodeQuotedPrintable(text: string): string {
  const bytes: number[] = [];
  for (let i = 0; i < text.length; i++) {
    if (text[i] === '=' && /^[0-9A-F]{2}$/i.test(text.slice(i + 1, i + 3))) {
      bytes.push(parseInt(text.slice(i + 1, i + 3), 16));
      i += 2;
    } else {
      bytes.push(...Buffer.from(text[i], 'utf8'));
    }
  }
  return Buffer.from(bytes).toString('utf8');
}

export interface ReceivedPush {
  subscription: string;
  /** The VAPID JWT's claims, once verified with the key the request named. */
  claims: JWTPayload;
  /** The key the request was signed with (the `k` of its Authorization header). */
  vapidKey: string;
  ttl: string;
  urgency: string;
  /** The decrypted payload. */
  payload: string;
  /** When it arrived (performance.now() of this process). */
  at: number;
}

const base64url = (bytes: Buffer) => bytes.toString('base64url');

/**
 * A stand-in for a browser push service (RFC 8030) on a loopback port: it hands out subscriptions as
 * a browser would (a P-256 key pair and an auth secret per subscription), checks each push's VAPID JWT
 * (RFC 8292), decrypts its aes128gcm payload (RFC 8291) with the subscription's private key, and
 * answers 201, or what a subscription is told to answer (410 for one that is gone).
 */
export class PushService {
  readonly pushes: ReceivedPush[] = [];
  readonly refusals: string[] = [];
  private readonly subscriptions = new Map<string, { ecdh: ECDH; auth: Buffer; status: number }>();
  private server?: http.Server;
  port = 0;

  async start(): Promise<void> {
    this.server = http.createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        void this.receive(request, Buffer.concat(chunks)).then(
          (status) => {
            response.writeHead(status);
            response.end();
          },
          (error: unknown) => {
            this.refusals.push(error instanceof Error ? error.message : String(error));
            response.writeHead(400);
            response.end();
          },
        );
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.address() as AddressInfo).port;
  }

  /** A new subscription, as PushSubscription.toJSON() gives it. */
  subscribe(id: string, status = 201): { endpoint: string; keys: { p256dh: string; auth: string } } {
    const ecdh = createECDH('prime256v1');
    ecdh.generateKeys();
    const auth = randomBytes(16);
    this.subscriptions.set(id, { ecdh, auth, status });
    return { endpoint: `http://127.0.0.1:${this.port}/push/${id}`, keys: { p256dh: base64url(ecdh.getPublicKey()), auth: base64url(auth) } };
  }

  for(id: string): ReceivedPush[] {
    return this.pushes.filter((push) => push.subscription === id);
  }

  private async receive(request: http.IncomingMessage, body: Buffer): Promise<number> {
    const id = /^\/push\/([^/]+)$/.exec(request.url ?? '')?.[1];
    const subscription = id ? this.subscriptions.get(id) : undefined;
    if (!id || !subscription) return 404;
    const vapid = /^vapid t=([^,\s]+),\s*k=([A-Za-z0-9_-]+)$/.exec(request.headers.authorization ?? '');
    if (!vapid) throw new Error(`no VAPID authorization: ${request.headers.authorization}`);
    const [, jwt, key] = vapid;
    const point = Buffer.from(key, 'base64url');
    if (point.length !== 65 || point[0] !== 4) throw new Error('the VAPID key is not an uncompressed P-256 point');
    const publicKey = await importJWK({ kty: 'EC', crv: 'P-256', x: base64url(point.subarray(1, 33)), y: base64url(point.subarray(33)) }, 'ES256');
    const { payload: claims } = await jwtVerify(jwt, publicKey, { audience: `http://127.0.0.1:${this.port}`, algorithms: ['ES256'] });
    if (typeof claims.sub !== 'string' || !/^(mailto:|https:)/.test(claims.sub)) throw new Error(`bad VAPID subject ${claims.sub}`);
    if (!claims.exp || claims.exp > Date.now() / 1000 + 24 * 60 * 60) throw new Error('the VAPID JWT expires more than a day ahead');
    if (request.headers['content-encoding'] !== 'aes128gcm') throw new Error(`content-encoding ${request.headers['content-encoding']}`);
    const payload = decryptAes128gcm(body, subscription.ecdh, subscription.auth);
    this.pushes.push({ subscription: id, claims, vapidKey: key, ttl: String(request.headers.ttl), urgency: String(request.headers.urgency), payload, at: performance.now() });
    return subscription.status;
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}

/** RFC 8291 with RFC 8188's aes128gcm content coding, one record: what a browser does with a push. */
function decryptAes128gcm(body: Buffer, receiver: ECDH, authSecret: Buffer): string {
  const salt = body.subarray(0, 16);
  const idLength = body[20];
  const senderKey = body.subarray(21, 21 + idLength);
  const ciphertext = body.subarray(21 + idLength);
  const shared = receiver.computeSecret(senderKey);
  const keyInfo = Buffer.concat([Buffer.from('WebPush: info\0'), receiver.getPublicKey(), senderKey]);
  const ikm = Buffer.from(hkdfSync('sha256', shared, authSecret, keyInfo, 32));
  const key = Buffer.from(hkdfSync('sha256', ikm, salt, Buffer.from('Content-Encoding: aes128gcm\0'), 16));
  const nonce = Buffer.from(hkdfSync('sha256', ikm, salt, Buffer.from('Content-Encoding: nonce\0'), 12));
  const decipher = createDecipheriv('aes-128-gcm', key, nonce);
  decipher.setAuthTag(ciphertext.subarray(ciphertext.length - 16));
  const padded = Buffer.concat([decipher.update(ciphertext.subarray(0, ciphertext.length - 16)), decipher.final()]);
  // The last record ends with the delimiter 2, then zero padding.
  const end = padded.lastIndexOf(2);
  if (end < 0 || padded.subarray(end + 1).some((byte) => byte !== 0)) throw new Error('bad padding');
  return padded.subarray(0, end).toString('utf8');
}
