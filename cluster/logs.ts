/**
 * Actor logs that leave their node: the per-replica rate limit a node applies before it publishes
 * a record on `hr1.<cluster>.sys.log`, and the one line format used on the node and by observers.
 */
import { LOG_LEVELS, type LogLevel, type LogRecord } from './protocol.ts';

/** Log records one actor replica may send per second (a burst of as many is allowed). @default 20 */
export const DEFAULT_LOG_RATE = 20;
/** A log message longer than this is cut (a record travels as one NATS message). @default 4000 */
export const MAX_LOG_MESSAGE_CHARS = 4000;

/** Whether `level` is at least `min` (`warn` passes `info` and `warn`, not `error`). */
export function atLeast(level: LogLevel, min: LogLevel): boolean {
  return LOG_LEVELS.indexOf(level) >= LOG_LEVELS.indexOf(min);
}

/**
 * A token bucket: `rate` records a second, bursts of `rate`. What it refuses is counted, and
 * the count is handed to the next record it lets through (as `dropped`), so a flood shows as
 * "N dropped" instead of vanishing.
 */
export class LogLimiter {
  private tokens: number;
  private last: number;
  private pendingDrops = 0;
  /** every record refused so far */
  dropped = 0;

  constructor(
    readonly rate: number,
    private readonly now: () => number = Date.now,
  ) {
    this.tokens = rate;
    this.last = now();
  }

  /** `undefined` when the record must be dropped; otherwise how many were dropped since the last one let through. */
  take(): number | undefined {
    const t = this.now();
    this.tokens = Math.min(this.rate, this.tokens + ((t - this.last) * this.rate) / 1000);
    this.last = t;
    if (this.tokens < 1) {
      this.pendingDrops++;
      this.dropped++;
      return undefined;
    }
    this.tokens -= 1;
    const d = this.pendingDrops;
    this.pendingDrops = 0;
    return d;
  }
}

/** Cut a message to {@link MAX_LOG_MESSAGE_CHARS}. */
export function clipMessage(msg: string): string {
  return msg.length <= MAX_LOG_MESSAGE_CHARS ? msg : `${msg.slice(0, MAX_LOG_MESSAGE_CHARS)}… (${msg.length - MAX_LOG_MESSAGE_CHARS} more characters)`;
}

/** `[node n1] Counter-1a2b3c4d-0 warn: low on memory (3 earlier lines dropped)`: how a record prints, on its node and elsewhere. */
export function formatLogRecord(r: LogRecord): string {
  const who = r.name !== undefined ? `${r.cls} ${r.actorId}` : r.actorId;
  const drops = r.dropped ? ` (${r.dropped} earlier line${r.dropped === 1 ? '' : 's'} dropped by the rate limit)` : '';
  return `[node ${r.nodeId}] ${who} ${r.level}: ${r.message}${drops}`;
}
