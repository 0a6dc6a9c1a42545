/**
 * A stdio server's stderr, into this server's log: each line prefixed with the server's name, and at most
 * `linesPerWindow` lines a window, so that a server that floods its stderr cannot flood the log (how many
 * were dropped is said once the window ends).
 */
export class StderrLog {
  private partial = '';
  private windowStart = 0;
  private inWindow = 0;
  private dropped = 0;

  constructor(
    private readonly name: string,
    private readonly linesPerWindow = 50,
    private readonly windowMs = 10_000,
    private readonly print: (line: string) => void = (line) => console.error(line),
  ) {}

  write(chunk: Buffer | string): void {
    const text = this.partial + chunk.toString();
    const lines = text.split('\n');
    // A long line without an end is cut rather than held forever.
    this.partial = (lines.pop() ?? '').slice(-4096);
    for (const line of lines) this.line(line.replace(/\r$/, ''));
  }

  private line(line: string): void {
    if (line.trim() === '') return;
    const now = Date.now();
    if (now - this.windowStart >= this.windowMs) {
      if (this.dropped > 0) this.print(`[${this.name}] (${this.dropped} lines of stderr left out)`);
      this.windowStart = now;
      this.inWindow = 0;
      this.dropped = 0;
    }
    if (this.inWindow >= this.linesPerWindow) {
      this.dropped += 1;
      return;
    }
    this.inWindow += 1;
    this.print(`[${this.name}] ${line.slice(0, 2000)}`);
  }
}
