import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { lineBatches } from '@/lib/mcp/http/log-lines';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mcp-log-lines-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

/**
 * A reader at the other end of a real pipe that reads nothing until told to (SIGUSR2), then copies
 * everything to a file: a log shipper that stalls, then recovers. The pipe is non-blocking on this
 * side, as standard output is for the server when it is a pipe.
 */
function stalledReader(file: string) {
  const child = spawn(
    process.execPath,
    [
      '-e',
      `const waiting = setInterval(() => {}, 1000);
       process.once('SIGUSR2', () => { clearInterval(waiting); process.stdin.pipe(require('node:fs').createWriteStream(${JSON.stringify(file)})); });
       process.send('ready');`,
    ],
    { stdio: ['pipe', 'ignore', 'inherit', 'ipc'] },
  );
  const ready = new Promise<void>((resolve) => child.once('message', () => resolve()));
  const fd = (child.stdin as unknown as { _handle: { fd: number } })._handle.fd;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return { child, fd, exited, ready };
}

const line = (index: number) => `${JSON.stringify({ n: index, padding: 'x'.repeat(100) })}\n`;

describe('log lines written in batches', () => {
  it('keeps at most the bound waiting for a reader that does not read, then says how many lines it dropped', async () => {
    const file = path.join(dir, 'stalled.log');
    const reader = stalledReader(file);
    await reader.ready;
    const maxWaitingBytes = 256 * 1024;
    const batches = lineBatches(reader.fd, { batchChars: 16 * 1024, maxWaitingBytes, droppedLine: (count) => `${JSON.stringify({ dropped: count })}\n` });
    const total = 20_000;
    let mostWaiting = 0;
    for (let index = 0; index < total; index += 1) {
      batches.write(line(index));
      mostWaiting = Math.max(mostWaiting, batches.waitingBytes);
    }
    batches.flush();
    // About 2.3 MB were logged: the pipe holds some, at most the bound waits, the rest is counted.
    expect(mostWaiting).toBeLessThanOrEqual(maxWaitingBytes);
    expect(mostWaiting).toBeGreaterThan(maxWaitingBytes / 2);
    expect(batches.dropped).toBeGreaterThan(total / 2);
    const dropped = batches.dropped;

    reader.child.kill('SIGUSR2');
    for (let tries = 0; tries < 200 && (batches.waitingBytes > 0 || batches.dropped > 0); tries += 1) {
      await new Promise((resolve) => setTimeout(resolve, 25));
      batches.flush();
    }
    expect(batches.waitingBytes).toBe(0);
    batches.write(line(total));
    batches.flush();
    reader.child.stdin!.end();
    reader.child.disconnect();
    await reader.exited;

    const written = fs.readFileSync(file, 'utf8').trimEnd().split('\n').map((text) => JSON.parse(text));
    // What was kept comes first, whole and in order; then the count of what was not; then what came after.
    const kept = written.slice(0, -2);
    expect(kept.map((entry) => entry.n)).toEqual(Array.from({ length: kept.length }, (_, index) => index));
    expect(written.at(-2)).toEqual({ dropped });
    expect(kept.length + dropped).toBe(total);
    expect(written.at(-1).n).toBe(total);
  });

  it('writes every line, in order, to a reader that reads', async () => {
    const file = path.join(dir, 'reading.log');
    const reader = stalledReader(file);
    await reader.ready;
    reader.child.kill('SIGUSR2');
    const batches = lineBatches(reader.fd, { batchChars: 4 * 1024, droppedLine: (count) => `${JSON.stringify({ dropped: count })}\n` });
    for (let index = 0; index < 3000; index += 1) {
      batches.write(line(index));
      if (index % 500 === 0) await new Promise((resolve) => setTimeout(resolve, 10));
    }
    for (let tries = 0; tries < 200 && batches.waitingBytes + batches.dropped > 0; tries += 1) {
      batches.flush();
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    batches.flush(true);
    reader.child.stdin!.end();
    reader.child.disconnect();
    await reader.exited;
    const written = fs.readFileSync(file, 'utf8').trimEnd().split('\n').map((text) => JSON.parse(text));
    expect(written.map((entry) => entry.n)).toEqual(Array.from({ length: 3000 }, (_, index) => index));
  });
});
