const encoder = new TextEncoder();
/** Comments keep proxies and idle timers from closing a quiet stream. */
const defaultKeepAliveMs = 15_000;

/** Every open stream of the process, wherever its module was bundled, so that shutdown can end them. */
const globalForStreams = globalThis as unknown as { __mcpTaskServerStreams?: Set<SseStream> };
const openStreams = (globalForStreams.__mcpTaskServerStreams ??= new Set());

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

/**
 * One server-sent-events response. `closed` tells writers when the client has gone; `signal` aborts
 * then too, so that work done only for this stream stops.
 */
export class SseStream {
  readonly body: ReadableStream<Uint8Array>;
  private controller!: ReadableStreamDefaultController<Uint8Array>;
  private readonly aborter = new AbortController();
  private readonly keepAlive: ReturnType<typeof setInterval>;

  constructor(keepAliveMs = defaultKeepAliveMs) {
    this.body = new ReadableStream<Uint8Array>({
      start: (controller) => {
        this.controller = controller;
        // A first comment makes the server send the headers now, not with the first event.
        controller.enqueue(encoder.encode(': stream open\n\n'));
      },
      cancel: () => this.finish(),
    });
    openStreams.add(this);
    this.keepAlive = setInterval(() => this.write(': keep-alive\n\n'), keepAliveMs);
    this.keepAlive.unref?.();
  }

  get signal(): AbortSignal {
    return this.aborter.signal;
  }

  get closed(): boolean {
    return this.aborter.signal.aborted;
  }

  /** Sends one JSON-RPC message as a `message` event, with an event id when the stream is resumable. */
  send(message: unknown, id?: number | string): void {
    this.write(`${id !== undefined ? `id: ${id}\n` : ''}data: ${JSON.stringify(message)}\n\n`);
  }

  /** An event with an id and no message, so that the client can resume from here. */
  prime(id: number | string, retryMs?: number): void {
    this.write(`id: ${id}\n${retryMs !== undefined ? `retry: ${retryMs}\n` : ''}data: \n\n`);
  }

  close(): void {
    if (this.closed) return;
    try {
      this.controller.close();
    } catch {
      // Already closed by the reader.
    }
    this.finish();
  }

  response(headers: Record<string, string> = {}): Response {
    return new Response(this.body, { status: 200, headers: { ...sseHeaders, ...headers } });
  }

  private write(chunk: string): void {
    if (this.closed) return;
    try {
      this.controller.enqueue(encoder.encode(chunk));
    } catch {
      this.finish();
    }
  }

  private finish(): void {
    openStreams.delete(this);
    clearInterval(this.keepAlive);
    if (!this.aborter.signal.aborted) this.aborter.abort(new Error('Stream closed'));
  }
}
