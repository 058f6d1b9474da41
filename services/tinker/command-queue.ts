// The commands of one training client run one at a time, in the order of their `seq_id` (the SDK
// numbers them 1, 2, 3, ... per client and sends them in that order, but over several
// connections, so one may overtake another). A command waits for the seq_ids before it until
// they arrive or a while has passed (a request the client never managed to send must not
// stall its client forever; TINKER_SEQ_GAP_WAIT_MS). Commands without a seq_id run in arrival order. In-process: every
// command of a training client must reach the same gateway process (see the README).

interface Queued {
  seq: number | null;
  arrived: number;
  order: number;
  run: () => Promise<void>;
}

class ClientQueue {
  constructor(private readonly gapWaitMs: number) {}

  private readonly waiting: Queued[] = [];
  private running = false;
  /** The highest seq_id run (or, after a restart, recorded) for the client. */
  lastSeq = 0;
  private timer: NodeJS.Timeout | undefined;
  private order = 0;

  submit(seq: number | null, run: () => Promise<void>): void {
    this.waiting.push({ seq, arrived: Date.now(), order: this.order++, run });
    this.waiting.sort((a, b) => (a.seq ?? Number.MAX_SAFE_INTEGER) - (b.seq ?? Number.MAX_SAFE_INTEGER) || a.order - b.order);
    this.pump();
  }

  private pump(): void {
    if (this.running) return;
    clearTimeout(this.timer);
    const head = this.waiting[0];
    if (!head) return;
    const waited = Date.now() - head.arrived;
    if (head.seq !== null && head.seq > this.lastSeq + 1 && waited < this.gapWaitMs) {
      this.timer = setTimeout(() => this.pump(), this.gapWaitMs - waited);
      return;
    }
    this.waiting.shift();
    if (head.seq !== null) this.lastSeq = Math.max(this.lastSeq, head.seq);
    this.running = true;
    // `run` records its own outcome (its future); nothing it throws may stop the queue.
    void head
      .run()
      .catch(() => {})
      .finally(() => {
        this.running = false;
        this.pump();
      });
  }
}

export class CommandQueues {
  private readonly queues = new Map<string, ClientQueue>();

  /** `gapWaitMs`: how long a command waits for an earlier seq_id that has not arrived (TINKER_SEQ_GAP_WAIT_MS). */
  constructor(private readonly gapWaitMs: number) {}

  /** Runs `run` after the commands of `clientId` before it (by seq_id). */
  submit(clientId: string, seq: number | null, run: () => Promise<void>): void {
    let queue = this.queues.get(clientId);
    if (!queue) {
      queue = new ClientQueue(this.gapWaitMs);
      this.queues.set(clientId, queue);
    }
    queue.submit(seq, run);
  }

  /** Whether this process has seen the client's commands (else its order is read from the futures first). */
  has(clientId: string): boolean {
    return this.queues.has(clientId);
  }

  /** Starts a client's order after `lastSeq`: what an earlier process ran or recorded of it. */
  seed(clientId: string, lastSeq: number): void {
    if (this.queues.has(clientId)) return;
    const queue = new ClientQueue(this.gapWaitMs);
    queue.lastSeq = lastSeq;
    this.queues.set(clientId, queue);
  }
}
