import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';

/**
 * An https server on loopback that serves client metadata documents, with a self-signed certificate
 * made by openssl for this run (the server under test trusts it through NODE_EXTRA_CA_CERTS).
 */
export class HttpsDocumentServer {
  private readonly routes = new Map<string, { status: number; body: string; headers: Record<string, string>; holdMs?: number }>();
  private readonly hits = new Map<string, number>();
  private readonly abandoned = new Map<string, number>();

  private constructor(
    private readonly server: https.Server,
    /** The folder of the key and certificate, when this server made them (and removes them). */
    private readonly ownDir: string | null,
    readonly keyFile: string,
    readonly certificateFile: string,
    readonly port: number,
  ) {}

  /** With `sameCertificateAs`, a second server the server under test trusts as well (one CA file). */
  static async start(sameCertificateAs?: HttpsDocumentServer): Promise<HttpsDocumentServer> {
    let ownDir: string | null = null;
    let keyFile: string;
    let certificateFile: string;
    if (sameCertificateAs) {
      ({ keyFile, certificateFile } = sameCertificateAs);
    } else {
      ownDir = fs.mkdtempSync(path.join(os.tmpdir(), 'mcp-cimd-'));
      keyFile = path.join(ownDir, 'key.pem');
      certificateFile = path.join(ownDir, 'cert.pem');
      const result = spawnSync('openssl', [
        'req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', '/CN=localhost',
        '-addext', 'subjectAltName=DNS:localhost,IP:127.0.0.1', '-keyout', keyFile, '-out', certificateFile,
      ], { encoding: 'utf8' });
      if (result.status !== 0) throw new Error(`openssl failed: ${result.stderr}`);
    }
    let documents: HttpsDocumentServer;
    const server = https.createServer({ key: fs.readFileSync(keyFile), cert: fs.readFileSync(certificateFile) }, (req, res) => {
      const pathname = new URL(req.url ?? '/', 'https://localhost').pathname;
      documents.hits.set(pathname, (documents.hits.get(pathname) ?? 0) + 1);
      const route = documents.routes.get(pathname);
      if (!route) {
        res.writeHead(404);
        res.end();
        return;
      }
      const answer = () => {
        if (res.destroyed) return;
        res.writeHead(route.status, route.headers);
        res.end(route.body);
      };
      if (route.holdMs === undefined) return answer();
      const timer = setTimeout(answer, route.holdMs);
      res.once('close', () => {
        if (res.writableFinished) return;
        clearTimeout(timer);
        documents.abandoned.set(pathname, (documents.abandoned.get(pathname) ?? 0) + 1);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    documents = new HttpsDocumentServer(server, ownDir, keyFile, certificateFile, (server.address() as AddressInfo).port);
    return documents;
  }

  url(pathname: string): string {
    return `https://localhost:${this.port}${pathname}`;
  }

  serve(pathname: string, document: unknown): void {
    this.serveRaw(pathname, 200, JSON.stringify(document), { 'Content-Type': 'application/json', 'Cache-Control': 'max-age=60' });
  }

  serveRaw(pathname: string, status: number, body: string, headers: Record<string, string> = {}): void {
    this.routes.set(pathname, { status, body, headers });
  }

  /** Serves a document only after `holdMs`, unless the client gives up first (see `abandonedRequests`). */
  serveLate(pathname: string, document: unknown, holdMs: number): void {
    this.routes.set(pathname, { status: 200, body: JSON.stringify(document), headers: { 'Content-Type': 'application/json' }, holdMs });
  }

  requests(pathname: string): number {
    return this.hits.get(pathname) ?? 0;
  }

  /** Requests whose client closed the connection before the answer was sent. */
  abandonedRequests(pathname: string): number {
    return this.abandoned.get(pathname) ?? 0;
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(resolve));
    if (this.ownDir) fs.rmSync(this.ownDir, { recursive: true, force: true });
  }
}
