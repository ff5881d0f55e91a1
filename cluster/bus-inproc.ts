import { BusClosedError, BusDisconnectedError, BusNoRespondersError, collectReplies, subjectMatches, type Bus, type BusMsg, type BusStatus, type BusSubscription } from './bus.ts';
import { PendingRequests } from './pending.ts';

interface Sub {
  id: number;
  pattern: string;
  queue: string | undefined;
  handler: (msg: BusMsg) => void;
}

/**
 * In-process bus with NATS semantics: wildcards, queue groups (round robin, so tests are
 * deterministic), no-responders, asynchronous delivery. Bytes pass as they are; every payload
 * is still produced by the codec, exactly as over NATS.
 */
export class InProcessBus implements Bus {
  readonly kind = 'inproc' as const;
  readonly address = 'inproc';
  private subs: Sub[] = [];
  private nextId = 1;
  private rr = new Map<string, number>();
  private cache = new Map<string, Sub[]>();
  private closed = false;
  private statusCbs: ((s: BusStatus) => void)[] = [];

  private targets(subject: string): Sub[] {
    let hit = this.cache.get(subject);
    if (hit) return hit;
    hit = this.subs.filter((s) => subjectMatches(s.pattern, subject));
    this.cache.set(subject, hit);
    return hit;
  }

  // deliver to every plain subscriber and to one member of each queue group
  private route(subject: string, data: Uint8Array, respond: (d: Uint8Array) => void): number {
    const subs = this.targets(subject);
    if (subs.length === 0) return 0;
    const groups = new Map<string, Sub[]>();
    const chosen: Sub[] = [];
    for (const s of subs) {
      if (s.queue === undefined) chosen.push(s);
      else {
        const g = groups.get(s.queue);
        if (g) g.push(s);
        else groups.set(s.queue, [s]);
      }
    }
    for (const [q, members] of groups) {
      const key = `${q}\u0000${subject}`;
      const i = (this.rr.get(key) ?? 0) % members.length;
      this.rr.set(key, i + 1);
      chosen.push(members[i] as Sub);
    }
    const msg: BusMsg = { subject, data, respond };
    for (const s of chosen) {
      queueMicrotask(() => {
        try {
          s.handler(msg);
        } catch {
          // a subscriber's bug must not break delivery to others
        }
      });
    }
    return chosen.length;
  }

  publish(subject: string, data: Uint8Array): void {
    if (this.closed) throw new BusClosedError(subject, 'in-process bus is closed');
    this.route(subject, data, () => {});
  }

  private pending = new PendingRequests();

  request(subject: string, data: Uint8Array, timeoutMs: number): Promise<Uint8Array> {
    if (this.closed) return Promise.reject(new BusClosedError(subject, 'in-process bus is closed'));
    return this.pending.open(
      subject,
      timeoutMs,
      (id) => {
        const n = this.route(subject, data, (reply) => this.pending.settle(id, reply));
        if (n === 0) this.pending.settle(id, new BusNoRespondersError(subject));
      },
      (e) => (e instanceof Error ? e : new Error(String(e))),
    );
  }

  failPending(prefix: string, err: (subject: string) => Error): number {
    return this.pending.failPending(prefix, err);
  }

  subscribe(subject: string, handler: (msg: BusMsg) => void, opts: { queue?: string } = {}): BusSubscription {
    const sub: Sub = { id: this.nextId++, pattern: subject, queue: opts.queue, handler };
    this.subs.push(sub);
    this.cache.clear();
    return {
      unsubscribe: () => {
        this.subs = this.subs.filter((s) => s.id !== sub.id);
        this.cache.clear();
      },
    };
  }

  gather(subject: string, data: Uint8Array, windowMs: number, expected = Infinity): Promise<Uint8Array[]> {
    const c = collectReplies(windowMs, expected);
    this.route(subject, data, (d) => c.add(d));
    return c.done;
  }

  async flush(): Promise<void> {}

  onStatus(cb: (s: BusStatus) => void): void {
    this.statusCbs.push(cb);
  }

  /**
   * For fault tests: behave as a NATS connection that dropped and came back at once: every
   * pending request fails with {@link BusDisconnectedError} (as NatsBus does on a disconnect),
   * then status callbacks see `disconnect` and `reconnect`. Subscriptions stay, as over NATS;
   * a reply to a failed request is ignored.
   */
  interrupt(): number {
    const n = this.pending.failAll((subject) => new BusDisconnectedError(subject, this.address));
    for (const cb of this.statusCbs) cb('disconnect');
    for (const cb of this.statusCbs) cb('reconnect');
    return n;
  }

  async close(): Promise<void> {
    this.closed = true;
    this.pending.close('in-process bus is closed');
    this.subs = [];
    this.cache.clear();
    for (const cb of this.statusCbs) cb('closed');
  }
}
