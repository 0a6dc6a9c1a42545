import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';

export interface ReceivedRequest {
  path: string;
  headers: Record<string, string>;
  body: string;
}

/** How a receiver answers one request: a status, after an optional wait. */
export type Answer = { status: number; delayMs?: number };

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
        const received = { path, headers: Object.fromEntries(Object.entries(request.headers).map(([name, value]) => [name, String(value)])), body: Buffer.concat(chunks).toString('utf8') };
        this.requests.push(received);
        const attempt = this.requests.filter((entry) => entry.path === path).length;
        const answer = this.answers.get(path)?.(attempt) ?? { status: 200 };
        setTimeout(() => {
          if (response.destroyed) return;
          response.writeHead(answer.status, { 'content-type': 'text/plain' });
          response.end(answer.status < 300 ? 'ok' : `refused with ${answer.status}`);
        }, answer.delayMs ?? 0);
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
