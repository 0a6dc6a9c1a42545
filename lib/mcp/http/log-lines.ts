import fs from 'node:fs';

/** At exit, how many milliseconds a full standard output is waited for before the last lines are given up. */
const exitWaits = 1000;
const exitPause = new Int32Array(new SharedArrayBuffer(4));

export interface LineBatchOptions {
  /** A busy server writes its lines in batches of about this many characters. */
  batchChars?: number;
  /**
   * What may wait in memory for a reader that does not read (a stalled log shipper, a full pipe):
   * past it, new lines are dropped and counted, and a line says how many once the reader reads again.
   */
  maxWaitingBytes?: number;
  /** The line that says how many lines were dropped (a JSON line of the log's own format). */
  droppedLine?: (count: number) => string;
}

export interface LineBatches {
  write(line: string): void;
  /** `final`: at exit, a full pipe is waited for (a little) rather than left for a batch that never comes. */
  flush(final?: boolean): void;
  /** Bytes waiting for the reader, and lines dropped since it last read. */
  readonly waitingBytes: number;
  readonly dropped: number;
}

/**
 * Log lines gathered in memory and written to a file descriptor from this thread in one system call
 * per batch: a line costs an array push, with no write, thread hop or wakeup of its own. What the
 * descriptor cannot take now (a full, non-blocking pipe) waits, batch by batch, for the next flush;
 * what waits is bounded (`maxWaitingBytes`), so a reader that stops reading costs neither memory
 * without end nor a copy of everything waiting at every flush.
 */
export function lineBatches(fd: number, options: LineBatchOptions = {}): LineBatches {
  const batchChars = options.batchChars ?? 64 * 1024;
  const maxWaitingBytes = options.maxWaitingBytes ?? 16 * 1024 * 1024;
  let lines: string[] = [];
  let chars = 0;
  /** Batches the descriptor has not taken yet, oldest first; the first may be partly written. */
  const waiting: Buffer[] = [];
  let waitingBytes = 0;
  let dropped = 0;

  const enqueue = (batch: Buffer) => {
    waiting.push(batch);
    waitingBytes += batch.length;
  };

  /** Writes what waits; false when the descriptor could take no more now. */
  const drain = (final: boolean): boolean => {
    let waits = 0;
    while (waiting.length > 0) {
      try {
        const written = fs.writeSync(fd, waiting[0]);
        waitingBytes -= written;
        if (written < waiting[0].length) waiting[0] = waiting[0].subarray(written);
        else waiting.shift();
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'EAGAIN') {
          if (final && waits++ < exitWaits) {
            Atomics.wait(exitPause, 0, 0, 1);
            continue;
          }
          return false;
        }
        // Any other failure (the reader is gone): those lines are lost and the server goes on.
        waiting.length = 0;
        waitingBytes = 0;
        return true;
      }
    }
    return true;
  };

  const flush = (final = false) => {
    if (chars > 0) {
      const text = lines.join('');
      lines = [];
      chars = 0;
      // Once lines are dropped, later ones are too until the reader has taken everything that waits:
      // the log then reads as what was kept, how many lines are missing, and what came after.
      const batch = Buffer.from(text);
      if (dropped > 0 || waitingBytes + batch.length > maxWaitingBytes) dropped += countLines(text);
      else enqueue(batch);
    }
    if (drain(final) && dropped > 0 && options.droppedLine) {
      const count = dropped;
      dropped = 0;
      enqueue(Buffer.from(options.droppedLine(count)));
      drain(final);
    }
  };

  return {
    write(line: string) {
      lines.push(line);
      chars += line.length;
      if (chars >= batchChars) flush();
    },
    flush,
    get waitingBytes() {
      return waitingBytes;
    },
    get dropped() {
      return dropped;
    },
  };
}

function countLines(text: string): number {
  let count = 0;
  for (let index = text.indexOf('\n'); index !== -1; index = text.indexOf('\n', index + 1)) count += 1;
  return count;
}
