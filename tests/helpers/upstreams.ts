import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort } from './server';

const root = path.resolve(__dirname, '..', '..');

/** The reference server that exercises every MCP feature, as published (a development dependency). */
export const everythingServer = path.join(root, 'node_modules', '@modelcontextprotocol', 'server-everything', 'dist', 'index.js');

/** A servers file entry that runs server-everything over stdio; `mark` tells its child apart in /proc. */
export function everythingOverStdio(mark: string, options: Record<string, unknown> = {}): Record<string, unknown> {
  return { command: process.execPath, args: [everythingServer, 'stdio'], env: { UPSTREAM_MARK: mark }, ...options };
}

/** Writes a servers file in a fresh folder; returns its path. */
export function writeServersFile(servers: Record<string, unknown>): string {
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'mcp-servers-')), 'servers.json');
  fs.writeFileSync(file, JSON.stringify({ mcpServers: servers }, null, 2));
  return file;
}

/** server-everything in its Streamable HTTP mode, as a process of its own on a loopback port. */
export async function startEverythingOverHttp(): Promise<{ url: string; stop(): Promise<void> }> {
  const port = await freePort();
  const child: ChildProcess = spawn(process.execPath, [everythingServer, 'streamableHttp'], {
    env: { ...process.env, PORT: String(port) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let log = '';
  child.stdout!.on('data', (chunk) => (log += chunk));
  child.stderr!.on('data', (chunk) => (log += chunk));
  const deadline = Date.now() + 20_000;
  while (!log.includes('listening on port')) {
    if (child.exitCode !== null) throw new Error(`server-everything exited with ${child.exitCode}: ${log}`);
    if (Date.now() > deadline) throw new Error(`server-everything did not start: ${log}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    stop: async () => {
      if (child.exitCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGKILL');
      await exited;
    },
  };
}

/** The pids of the processes whose environment holds UPSTREAM_MARK=<mark> (a stdio server's children). */
export function pidsMarked(mark: string): number[] {
  const pids: number[] = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const environ = fs.readFileSync(`/proc/${entry}/environ`, 'utf8').split('\0');
      if (environ.includes(`UPSTREAM_MARK=${mark}`)) pids.push(Number(entry));
    } catch {
      // Gone, or not ours to read.
    }
  }
  return pids;
}
