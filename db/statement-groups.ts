import { storageTroubleOf } from './errors';

interface Waiting<E, A> {
  entry: E;
  resolve(answer: A): void;
  reject(error: unknown): void;
}

/**
 * Writes asked for while a statement doing the same work runs in their lane wait for it, then go
 * together in the next statement: one commit for the group, where one after another each would wait
 * for the flush of the one before. Each is answered as if it had come alone. A lane is listed from the
 * start of its first statement until nothing of it waits.
 */
export class StatementGroups<E, A> {
  private readonly lanes = new Map<string, Array<Waiting<E, A>>>();

  constructor(
    /** Does the entries' work in one statement; answers in the same order. */
    private readonly runGroup: (entries: E[]) => Promise<A[]>,
    private readonly largestGroup: number,
    /** Entries with the same key never share a statement: the later one waits for the next. */
    private readonly keyOf?: (entry: E) => string,
  ) {}

  ask(lane: string, entry: E): Promise<A> {
    return new Promise((resolve, reject) => {
      const waiting = { entry, resolve, reject };
      const queue = this.lanes.get(lane);
      if (queue) {
        queue.push(waiting);
        return;
      }
      this.lanes.set(lane, []);
      void this.drain(lane, [waiting]);
    });
  }

  private async drain(lane: string, firstGroup: Array<Waiting<E, A>>): Promise<void> {
    for (let group = firstGroup; group.length > 0; ) {
      await this.runOne(group);
      group = this.takeGroup(this.lanes.get(lane)!);
      if (group.length === 0) this.lanes.delete(lane);
    }
  }

  /** The next group from the front of the queue, in the order asked, leaving what must wait longer. */
  private takeGroup(queue: Array<Waiting<E, A>>): Array<Waiting<E, A>> {
    if (!this.keyOf) return queue.splice(0, this.largestGroup);
    const keys = new Set<string>();
    const group: Array<Waiting<E, A>> = [];
    const later: Array<Waiting<E, A>> = [];
    for (const waiting of queue) {
      const key = this.keyOf(waiting.entry);
      if (group.length < this.largestGroup && !keys.has(key)) {
        keys.add(key);
        group.push(waiting);
      } else later.push(waiting);
    }
    queue.splice(0, queue.length, ...later);
    return group;
  }

  private async runOne(group: Array<Waiting<E, A>>): Promise<void> {
    let answers: A[];
    try {
      answers = await this.runGroup(group.map((waiting) => waiting.entry));
    } catch (error) {
      // A statement PostgreSQL refused for what it held, not for storage trouble, changed nothing: each
      // entry is tried alone, so that one that cannot be done fails alone.
      if (group.length > 1 && !storageTroubleOf(error)) {
        for (const waiting of group) await this.runOne([waiting]);
        return;
      }
      for (const waiting of group) waiting.reject(error);
      return;
    }
    group.forEach((waiting, index) => waiting.resolve(answers[index]));
  }
}
