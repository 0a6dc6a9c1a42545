/** At most `size` calls at once; the rest wait, first come first served, until a slot is free or their signal fires. */
export class Slots {
  private used = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(private readonly size: number) {}

  free(): boolean {
    return this.used < this.size;
  }

  async take(signal: AbortSignal): Promise<() => void> {
    signal.throwIfAborted();
    if (this.used < this.size) {
      this.used += 1;
      return this.releaser();
    }
    await new Promise<void>((resolve, reject) => {
      const turn = () => {
        signal.removeEventListener('abort', leave);
        resolve();
      };
      const leave = () => {
        const at = this.waiting.indexOf(turn);
        if (at >= 0) this.waiting.splice(at, 1);
        reject(signal.reason);
      };
      this.waiting.push(turn);
      signal.addEventListener('abort', leave, { once: true });
    });
    // The slot was handed over by its last holder: `used` already counts it.
    return this.releaser();
  }

  private releaser(): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.waiting.shift();
      if (next) next();
      else this.used -= 1;
    };
  }
}
