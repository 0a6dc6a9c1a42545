const encoder = new TextEncoder();
/** Comments keep proxies and idle timers from closing a quiet stream. */
const defaultKeepAliveMs = 15_000;

/** Every open stream of the process, wherever its module was bundled, so that shutdown can end them. */
const globalForStreams = globalThis as unknown as { __mcpTaskServerStreams?: Set<SseStream> };
const openStreams = (globalForStreams.__mcpTaskServerStreams ??= new Set());

/**
 * The open streams of each keep-alive period, and the one timer that writes their comments: thousands
 * of streams may wait at once, and a timer each is not free. A stream's first comment comes within one
 * period of its opening.
 */
const keepAliveGroups = new Map<number, { streams: Set<SseStream>; timer: ReturnType<typeof setInterval> }>();

/** Ends every open stream: a graceful shutdown waits for open responses, and these never end by themselves. */
export function closeAllStreams(): void {
  for (const stream of openStreams) stream.close();
}

export const sseHeaders = {
  'Content-Type': 'text/event-stream',
  'Cache-Control': 'no-cache, no-transform',
  Connection: 'keep-alive',
  'X-Accel-Buffering': 'no',
};

/** What runs when a stream closes: a function, or an object whose `streamClosed` is called (no closure to hold). */
export type StreamCloseListener = (() => void) | { streamClosed(): void };

const runCloseListener = (listener: StreamCloseListener) => (typeof listener === 'function' ? listener() : listener.streamClosed());

/** Where a stream's text goes: a Node response, or the controller of a Web stream. */
export interface SseSink {
  write(chunk: string): void;
  end(): void;
}

/**
 * One server-sent-events response, written to whichever sink carries it (`attach`): text written
 * before then waits for it. `closed` tells writers when the client has gone; `onClose` listeners run
 * then, so that work done only for this stream stops.
 */
export class SseStream {
  private sink: SseSink | undefined;
  /** A first comment makes the server send the headers now, not with the first event. */
  private pending: string[] | undefined = [': stream open\n\n'];
  /** What runs when the stream closes; undefined once it has. A list, not an AbortSignal: thousands of streams wait at once, and a signal with its listeners holds about a kilobyte. */
  private closeListeners: StreamCloseListener[] | undefined = [];
  private aborter: AbortController | undefined;

  constructor(private readonly keepAliveMs = defaultKeepAliveMs) {
    openStreams.add(this);
    let group = keepAliveGroups.get(keepAliveMs);
    if (!group) {
      const streams = new Set<SseStream>();
      const timer = setInterval(() => {
        for (const stream of streams) stream.write(': keep-alive\n\n');
      }, keepAliveMs);
      timer.unref?.();
      keepAliveGroups.set(keepAliveMs, (group = { streams, timer }));
    }
    group.streams.add(this);
  }

  get closed(): boolean {
    return this.closeListeners === undefined;
  }

  /** Runs `listener` once the stream closes, or now if it has. */
  onClose(listener: StreamCloseListener): void {
    if (this.closeListeners) this.closeListeners.push(listener);
    else runCloseListener(listener);
  }

  /** An AbortSignal that aborts when the stream closes, for what takes a signal. */
  get signal(): AbortSignal {
    if (!this.aborter) {
      const aborter = (this.aborter = new AbortController());
      this.onClose(() => aborter.abort(new Error('Stream closed')));
    }
    return this.aborter.signal;
  }

  /** Starts writing to `sink`: what was written so far first. A stream attaches once. */
  attach(sink: SseSink): void {
    if (this.sink) throw new Error('The stream is already attached');
    this.sink = sink;
    for (const chunk of this.pending ?? []) sink.write(chunk);
    this.pending = undefined;
    if (this.closed) sink.end();
  }

  /** The stream as a Web stream's body, for route handlers. */
  toReadableStream(): ReadableStream<Uint8Array> {
    return new ReadableStream<Uint8Array>({
      start: (controller) =>
        this.attach({
          write: (chunk) => controller.enqueue(encoder.encode(chunk)),
          end: () => {
            try {
              controller.close();
            } catch {
              // Already closed by the reader.
            }
          },
        }),
      cancel: () => this.abandon(),
    });
  }

  /** A Web `Response` carrying the stream. */
  response(headers: Record<string, string> = {}): Response {
    return new Response(this.toReadableStream(), { status: 200, headers: { ...sseHeaders, ...headers } });
  }

  /** Sends one JSON-RPC message as a `message` event, with an event id when the stream is resumable. */
  send(message: unknown, id?: number | string): void {
    this.write(`${id !== undefined ? `id: ${id}\n` : ''}data: ${JSON.stringify(message)}\n\n`);
  }

  /** An event with an id and no message, so that the client can resume from here. */
  prime(id: number | string, retryMs?: number): void {
    this.write(`id: ${id}\n${retryMs !== undefined ? `retry: ${retryMs}\n` : ''}data: \n\n`);
  }

  /** Ends the stream from this side. */
  close(): void {
    if (this.closed) return;
    this.finish();
    this.sink?.end();
  }

  /** The client has gone: nothing more is written. */
  abandon(): void {
    this.finish();
  }

  private write(chunk: string): void {
    if (this.closed) return;
    if (!this.sink) {
      this.pending!.push(chunk);
      return;
    }
    try {
      this.sink.write(chunk);
    } catch {
      this.finish();
    }
  }

  private finish(): void {
    openStreams.delete(this);
    const group = keepAliveGroups.get(this.keepAliveMs);
    if (group?.streams.delete(this) && group.streams.size === 0) {
      clearInterval(group.timer);
      keepAliveGroups.delete(this.keepAliveMs);
    }
    const listeners = this.closeListeners;
    if (!listeners) return;
    this.closeListeners = undefined;
    for (const listener of listeners) {
      try {
        runCloseListener(listener);
      } catch (error) {
        // One listener's failure must not keep the others from running.
        console.error('A listener of a closed event stream failed', error);
      }
    }
  }
}
