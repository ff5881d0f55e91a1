import { BusClosedError, BusTimeoutError } from './bus.ts';

interface Entry {
  subject: string;
  resolve: (d: Uint8Array) => void;
  reject: (e: Error) => void;
  deadline: number;
  timeoutMs: number;
}

/**
 * Requests waiting for a reply, shared by both buses: one coarse timer for every deadline instead
 * of a timer per request, and `failPending` to fail an actor's calls when its node dies.
 */
export class PendingRequests {
  private pending = new Map<number, Entry>();
  private seq = 0;
  private sweeper: NodeJS.Timeout | undefined;

  /** Register a request; `send(id)` publishes it (a throw from it rejects the request). */
  open(subject: string, timeoutMs: number, send: (id: number) => void, mapSendError: (e: unknown) => Error): Promise<Uint8Array> {
    return new Promise((resolve, reject) => {
      const id = ++this.seq;
      this.pending.set(id, { subject, resolve, reject, deadline: performance.now() + timeoutMs, timeoutMs });
      try {
        send(id);
      } catch (e) {
        this.pending.delete(id);
        reject(mapSendError(e));
        return;
      }
      this.sweeper ??= setInterval(() => this.sweep(), 20);
    });
  }

  /** The reply (or a failure) for request `id`; unknown ids (late replies) are ignored. */
  settle(id: number, reply: Uint8Array | Error): void {
    const p = this.pending.get(id);
    if (!p) return;
    this.pending.delete(id);
    if (reply instanceof Error) p.reject(reply);
    else p.resolve(reply);
  }

  subjectOf(id: number): string | undefined {
    return this.pending.get(id)?.subject;
  }

  /** Reject every request whose subject starts with `prefix`. */
  failPending(prefix: string, err: (subject: string) => Error): number {
    let n = 0;
    for (const [id, p] of this.pending) {
      if (p.subject.startsWith(prefix)) {
        this.pending.delete(id);
        p.reject(err(p.subject));
        n++;
      }
    }
    return n;
  }

  /**
   * Reject every pending request with `err(subject)` (the connection dropped: their replies may
   * never come). Requests opened afterwards are not affected. Returns how many failed.
   */
  failAll(err: (subject: string) => Error): number {
    const n = this.pending.size;
    if (n === 0) return 0;
    const all = [...this.pending.values()];
    this.pending.clear();
    for (const p of all) p.reject(err(p.subject));
    return n;
  }

  /** Reject everything (the bus is closing). */
  close(reason: string): void {
    if (this.sweeper) clearInterval(this.sweeper);
    this.sweeper = undefined;
    for (const [id, p] of this.pending) {
      this.pending.delete(id);
      p.reject(new BusClosedError(p.subject, reason));
    }
  }

  private sweep(): void {
    if (this.pending.size === 0) {
      clearInterval(this.sweeper);
      this.sweeper = undefined;
      return;
    }
    const now = performance.now();
    for (const [id, p] of this.pending) {
      if (p.deadline <= now) {
        this.pending.delete(id);
        p.reject(new BusTimeoutError(p.subject, p.timeoutMs));
      }
    }
  }
}
