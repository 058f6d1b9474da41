// Trainer turns shared fairly between entities: commands of training clients that are ready
// (their earlier seq_ids done) wait here for one of `slots` turns (one per trainer), and when
// several entities wait, they take turns round-robin, so an entity with many busy training
// clients cannot starve one with a single client. Within an entity, first come first served.
export class FairGate {
  private running = 0;
  private readonly waiting = new Map<string, (() => void)[]>();
  /** Entities in the order they take their next turn. */
  private readonly rotation: string[] = [];

  constructor(private readonly slots: number) {}

  async run<T>(entity: string, work: () => Promise<T>): Promise<T> {
    await this.turn(entity);
    try {
      return await work();
    } finally {
      this.running--;
      this.next();
    }
  }

  private turn(entity: string): Promise<void> {
    if (this.running < this.slots && this.rotation.length === 0) {
      this.running++;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      const queue = this.waiting.get(entity);
      if (queue) queue.push(resolve);
      else {
        this.waiting.set(entity, [resolve]);
        this.rotation.push(entity);
      }
    });
  }

  private next(): void {
    while (this.running < this.slots) {
      const entity = this.rotation.shift();
      if (entity === undefined) return;
      const queue = this.waiting.get(entity) ?? [];
      const resolve = queue.shift();
      if (queue.length > 0) this.rotation.push(entity);
      else this.waiting.delete(entity);
      if (!resolve) continue;
      this.running++;
      resolve();
    }
  }
}
