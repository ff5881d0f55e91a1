/**
 * The messaging seam under the actor runtime: NATS core semantics (subjects with `*`/`>`
 * wildcards, queue groups, request/reply, no-responders) implemented twice, in-process and over
 * NATS. Everything above it (nodes, placement, supervision, calls) is written once.
 */
import { Hr1Error } from './errors.ts';

export interface BusMsg {
  readonly subject: string;
  readonly data: Uint8Array;
  /** Reply to a request; a no-op for plain publishes. */
  respond(data: Uint8Array): void;
}

export interface BusSubscription {
  unsubscribe(): void;
}

export type BusStatus = 'disconnect' | 'reconnect' | 'closed';

export interface Bus {
  readonly kind: 'inproc' | 'nats';
  /** Where this bus is connected, for messages (`inproc` or the server URL). */
  readonly address: string;
  publish(subject: string, data: Uint8Array): void;
  /**
   * Request/reply; rejects with {@link BusNoRespondersError} or {@link BusTimeoutError}, or with
   * {@link BusDisconnectedError} when the connection drops while it is pending (every pending
   * request fails at once then; the bus reconnects by itself).
   */
  request(subject: string, data: Uint8Array, timeoutMs: number): Promise<Uint8Array>;
  subscribe(subject: string, handler: (msg: BusMsg) => void, opts?: { queue?: string }): BusSubscription;
  /** Publish a request and collect every reply that arrives within the window (scatter-gather); with `expected`, return as soon as that many replied. */
  gather(subject: string, data: Uint8Array, windowMs: number, expected?: number): Promise<Uint8Array[]>;
  /** Reject every pending request whose subject starts with `prefix` (e.g. an actor's calls when its node died). */
  failPending(prefix: string, err: (subject: string) => Error): number;
  /** Resolves when everything published so far has reached the server. */
  flush(): Promise<void>;
  onStatus(cb: (s: BusStatus) => void): void;
  close(): Promise<void>;
}

/**
 * Base of the bus's transport signals. The client maps them to typed cluster errors
 * (`UnknownActorError`, `CallTimeoutError`, …) before a caller sees them; `name` stays `Error`
 * and they wire as `'task'`, so one that escapes reads exactly as before they joined Hr1Error.
 */
export class BusError<C extends 'NO_RESPONDERS' | 'TIMEOUT' | 'BUS_CLOSED' | 'DISCONNECTED'> extends Hr1Error<C> {
  static override readonly wireAs = 'task';
  /** the subject the request or publish was on */
  readonly subject: string;
  constructor(code: C, subject: string, message: string) {
    super(code, message);
    // unchanged from when these were plain Errors: their text may land in logs and records
    this.name = 'Error';
    this.subject = subject;
  }
}

/** Nobody is subscribed to the subject. */
export class BusNoRespondersError extends BusError<'NO_RESPONDERS'> {
  constructor(subject: string) {
    super('NO_RESPONDERS', subject, `no responders on ${subject}`);
  }
}

/** No reply in time. */
export class BusTimeoutError extends BusError<'TIMEOUT'> {
  readonly timeoutMs: number;
  constructor(subject: string, timeoutMs: number) {
    super('TIMEOUT', subject, `no reply on ${subject} within ${timeoutMs} ms`);
    this.timeoutMs = timeoutMs;
  }
}

/** Bus connection is closed or down. */
export class BusClosedError extends BusError<'BUS_CLOSED'> {
  constructor(subject: string, reason: string) {
    super('BUS_CLOSED', subject, `cannot send on ${subject}: ${reason}`);
  }
}

/**
 * The connection dropped while the request was pending: its reply, if one comes, cannot be
 * trusted to arrive (the inbox may be resubscribed after the responder answered), so the bus
 * fails every pending request with this at once instead of letting them wait for their timeout.
 */
export class BusDisconnectedError extends BusError<'DISCONNECTED'> {
  /** where the bus was connected */
  readonly address: string;
  constructor(subject: string, address: string) {
    super('DISCONNECTED', subject, `the connection to NATS at ${address} was lost while the request on ${subject} was pending`);
    this.address = address;
  }
}

/** NATS subject matching with `*` (one token) and `>` (the rest). */
export function subjectMatches(pattern: string, subject: string): boolean {
  if (pattern === subject) return true;
  const p = pattern.split('.');
  const s = subject.split('.');
  for (let i = 0; i < p.length; i++) {
    const t = p[i];
    if (t === '>') return s.length > i;
    if (i >= s.length) return false;
    if (t !== '*' && t !== s[i]) return false;
  }
  return p.length === s.length;
}

/**
 * The reply side of a scatter-gather, shared by both buses: collects replies and resolves with
 * them when `expected` have come or the window closes, whichever is first.
 */
export function collectReplies(windowMs: number, expected: number, onDone: () => void = () => {}): { add(d: Uint8Array): void; done: Promise<Uint8Array[]> } {
  const out: Uint8Array[] = [];
  let finish: () => void = () => {};
  const done = new Promise<Uint8Array[]>((resolve) => {
    let over = false;
    const timer = setTimeout(() => finish(), windowMs);
    finish = () => {
      if (over) return;
      over = true;
      clearTimeout(timer);
      onDone();
      resolve(out);
    };
  });
  return {
    add(d) {
      out.push(d);
      if (out.length >= expected) finish();
    },
    done,
  };
}
