/**
 * Progress on stderr. On a TTY: cli-progress bars. Otherwise (nohup, CI, a pipe): a line at most
 * every {@link progressIntervalMs} (`eval: 1,240/2,800 episodes (44%), 31.2/s, ETA 50 s`), and
 * one when a unit finishes. Nothing when silent. Rates and ETAs read the wall clock: they are for
 * display only, never results.
 */
import cliProgress from 'cli-progress';
import { parseDuration } from '../../cluster/duration.ts';
import { Hr1Error } from '../../cluster/errors.ts';

/** Time between progress lines when stderr is not a TTY. @default 10_000 ms */
export const DEFAULT_PROGRESS_INTERVAL_MS = 10_000;
/** The environment variable that sets that time: ms, or a duration like `"30s"` (`"0"` is not allowed). */
export const PROGRESS_INTERVAL_ENV = 'HR1_PROGRESS_INTERVAL';
/** A line that says nothing new is still printed after this long, so a stalled run shows it is alive. @default 60_000 ms */
export const PROGRESS_QUIET_MS = 60_000;

/**
 * The interval between progress lines: {@link PROGRESS_INTERVAL_ENV} when set, else
 * {@link DEFAULT_PROGRESS_INTERVAL_MS}. A value that is not a positive duration is an error naming the variable.
 */
export function progressIntervalMs(env: Readonly<Record<string, string | undefined>> = process.env): number {
  const v = env[PROGRESS_INTERVAL_ENV];
  if (v === undefined || v.trim() === '') return DEFAULT_PROGRESS_INTERVAL_MS;
  let ms: number;
  try {
    ms = parseDuration(v);
  } catch {
    ms = Number.NaN;
  }
  if (!(ms > 0)) throw new Hr1Error('BAD_OPTION', `${PROGRESS_INTERVAL_ENV}: "${v}" is not a positive duration; write ms or e.g. "10s", or unset it for ${DEFAULT_PROGRESS_INTERVAL_MS / 1000} s`, { data: { variable: PROGRESS_INTERVAL_ENV, value: v } });
  return ms;
}

/** What one progress line tells. */
export interface ProgressSnapshot {
  /** what is counted, e.g. `eval` or `[3/12] alfworld vanilla` */
  label: string;
  /** @default 'episodes' */
  unit?: string;
  done: number;
  total: number;
  /** of `done`, how many came from a cache (instantly): not counted in the rate */
  cached?: number;
  /** wall-clock ms since the count began */
  elapsedMs: number;
  /** the last line: the time taken instead of an ETA */
  final?: boolean;
}

const n = (x: number): string => Math.round(x).toLocaleString('en-US');

/** `50 s`, `3 min 5 s`, `2 h 4 min`. */
export function formatDurationShort(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s`;
  return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
}

/** `31.2/s`; below 0.1 a second, per minute (`4.0/min`). */
export function formatRate(perSecond: number): string {
  if (perSecond >= 100) return `${n(perSecond)}/s`;
  if (perSecond >= 0.1) return `${perSecond.toFixed(1)}/s`;
  return `${(perSecond * 60).toFixed(1)}/min`;
}

/**
 * One progress line. The rate counts what ran (not what came from the cache) over the elapsed
 * time; the ETA is what is left at that rate (`ETA ?` until something ran).
 *
 * @example
 * formatProgressLine({ label: 'eval', done: 1240, total: 2800, elapsedMs: 39_744 });
 * // 'eval: 1,240/2,800 episodes (44%), 31.2/s, ETA 50 s'
 */
export function formatProgressLine(s: ProgressSnapshot): string {
  const unit = s.unit ?? 'episodes';
  const cached = s.cached ?? 0;
  // floored, so 100% means done
  const pct = s.total > 0 ? Math.floor((s.done / s.total) * 100) : 100;
  const ran = Math.max(0, s.done - cached);
  const rate = s.elapsedMs > 0 ? ran / (s.elapsedMs / 1000) : 0;
  const left = Math.max(0, s.total - s.done);
  const tail = s.final ? `took ${formatDurationShort(s.elapsedMs)}` : left === 0 ? 'ETA 0 s' : rate > 0 ? `ETA ${formatDurationShort((left / rate) * 1000)}` : 'ETA ?';
  return `${s.label}: ${n(s.done)}/${n(s.total)} ${unit} (${pct}%${cached ? `, ${n(cached)} cached` : ''}), ${formatRate(rate)}, ${tail}`;
}

/** A count of work (episodes) going up, shown as a bar (TTY) or periodic lines. */
export interface CountProgress {
  /** `done` so far; a new `total`, or `done` going down, starts a new count (another rollout) */
  update(done: number, o?: { total?: number; cached?: number }): void;
  /** the work finished: the bar completes, or the final line is written (when `final`) */
  finish(): void;
  /** stop without a final line (on an error); safe to call after finish() */
  stop(): void;
}

export interface CountProgressOptions {
  label: string;
  /** @default 'episodes' */
  unit?: string;
  total: number;
  /** `auto`: a bar on a TTY, lines otherwise. @default 'auto' */
  mode?: ProgressMode;
  /** @default process.stderr */
  stream?: NodeJS.WritableStream & { isTTY?: boolean };
  /** between lines. @default progressIntervalMs() */
  intervalMs?: number;
  /** write a final line in finish() (lines mode). @default true */
  final?: boolean;
  /** the clock for rates and ETAs, ms. @default performance.now */
  now?: () => number;
}

/**
 * Progress of one count. Lines mode writes a line each `intervalMs` while the count moves (and
 * every {@link PROGRESS_QUIET_MS} while it does not), then a final line.
 *
 * @example
 * const p = countProgress({ label: 'eval', total: episodes.length });
 * // ... p.update(done, { cached }) ...
 * p.finish();
 */
export function countProgress(o: CountProgressOptions): CountProgress {
  const stream = o.stream ?? process.stderr;
  const mode = o.mode === undefined || o.mode === 'auto' ? (stream.isTTY ? 'bars' : 'lines') : o.mode;
  const unit = o.unit ?? 'episodes';
  if (mode === 'silent') return { update() {}, finish() {}, stop() {} };
  if (mode === 'bars') {
    const bar = new cliProgress.SingleBar({ format: `${unit} {bar} {value}/{total} ({cached} cached) {eta_formatted} left`, stream: stream as NodeJS.WriteStream }, cliProgress.Presets.shades_classic);
    bar.start(Math.max(1, o.total), 0, { cached: 0 });
    let stopped = false;
    const stop = () => {
      if (!stopped) bar.stop();
      stopped = true;
    };
    return {
      update(done, u = {}) {
        if (u.total !== undefined) bar.setTotal(Math.max(1, u.total));
        bar.update(done, { cached: u.cached ?? 0 });
      },
      finish: stop,
      stop,
    };
  }
  const now = o.now ?? (() => performance.now());
  const interval = o.intervalMs ?? progressIntervalMs();
  let t0 = now();
  let total = o.total;
  let done = 0;
  let cached = 0;
  // a line that says nothing new waits for PROGRESS_QUIET_MS (nothing done yet included)
  let printedDone = 0;
  let printedAt = t0;
  let stopped = false;
  const line = (final: boolean) => formatProgressLine({ label: o.label, unit, done, total, cached, elapsedMs: now() - t0, final });
  const tick = () => {
    // the count is complete: finish() writes the last line
    if (total > 0 && done >= total) return;
    const t = now();
    if (t - printedAt < (done === printedDone ? Math.max(PROGRESS_QUIET_MS, interval) : interval)) return;
    printedDone = done;
    printedAt = t;
    stream.write(`${line(false)}\n`);
  };
  // the timer speaks while the count stalls; update() checks too, since work that never yields to
  // the event loop (an in-process cluster) starves timers
  const timer = setInterval(tick, interval);
  // progress never keeps the process alive
  timer.unref();
  const stop = () => {
    stopped = true;
    clearInterval(timer);
  };
  return {
    update(d, u = {}) {
      if ((u.total !== undefined && u.total !== total) || d < done) {
        t0 = now();
        printedDone = 0;
        printedAt = t0;
      }
      if (u.total !== undefined) total = u.total;
      done = d;
      cached = u.cached ?? cached;
      if (!stopped) tick();
    },
    finish() {
      if (stopped) return;
      stop();
      if (o.final ?? true) stream.write(`${line(true)}\n`);
    },
    stop,
  };
}

export interface Progress {
  /** a unit begins: its label and its episode count */
  start(label: string, episodes: number): void;
  /** episodes done within the current unit */
  episodes(done: number, total: number, cached: number): void;
  /** the current unit finished (skipped: it was already in the run folder) */
  done(label: string, info: { skipped: boolean; ran: number; cached: number; ms: number }): void;
  log(line: string): void;
  /** set the total number of units (known once the plan is made) */
  total(units: number): void;
  stop(): void;
}

export type ProgressMode = 'auto' | 'bars' | 'lines' | 'silent';

/**
 * The progress of an experiment's units. Lines mode (stderr not a TTY) writes periodic lines
 * within a unit (`[3/12] alfworld vanilla: 240/1,340 episodes (17%), 12.0/s, ETA 1 min 31 s`)
 * and one when it finishes.
 */
export function makeProgress(mode: ProgressMode = 'auto', stream: NodeJS.WriteStream = process.stderr, opts: { intervalMs?: number; now?: () => number } = {}): Progress {
  const m = mode === 'auto' ? (stream.isTTY ? 'bars' : 'lines') : mode;
  let units = 0;
  let finished = 0;
  if (m === 'silent') return { start() {}, episodes() {}, done() {}, log() {}, total() {}, stop() {} };
  if (m === 'lines') {
    const intervalMs = opts.intervalMs ?? progressIntervalMs();
    // the current unit's episode count
    let unit: CountProgress | null = null;
    return {
      start(label, episodes) {
        unit?.stop();
        unit = countProgress({ label: `[${finished + 1}/${units}] ${label}`, total: episodes, mode: 'lines', stream, intervalMs, final: false, ...(opts.now ? { now: opts.now } : {}) });
      },
      episodes(done, total, cached) {
        unit?.update(done, { total, cached });
      },
      done(label, i) {
        unit?.stop();
        unit = null;
        finished++;
        if (!i.skipped) stream.write(`[${finished}/${units}] ${label}: ${i.ran} episodes run, ${i.cached} cached, ${(i.ms / 1000).toFixed(1)} s\n`);
        else stream.write(`[${finished}/${units}] ${label}: already done (skipped)\n`);
      },
      log(line) {
        stream.write(`${line}\n`);
      },
      total(n) {
        units = n;
      },
      stop() {
        unit?.stop();
        unit = null;
      },
    };
  }
  const multi = new cliProgress.MultiBar({ stream, clearOnComplete: false, hideCursor: true, format: '{name} {bar} {value}/{total} {label}', barsize: 30 }, cliProgress.Presets.shades_classic);
  const uBar = multi.create(1, 0, { name: 'units   ', label: '' });
  const eBar = multi.create(1, 0, { name: 'episodes', label: '' });
  return {
    start(label, n) {
      uBar.update(finished, { label });
      eBar.setTotal(Math.max(1, n));
      eBar.update(0, { label: '' });
    },
    episodes(done, total, cached) {
      eBar.setTotal(Math.max(1, total));
      eBar.update(done, { label: cached ? `(${cached} cached)` : '' });
    },
    done(label) {
      finished++;
      uBar.update(finished, { label });
    },
    log(line) {
      multi.log(`${line}\n`);
    },
    total(n) {
      units = n;
      uBar.setTotal(Math.max(1, units));
    },
    stop() {
      multi.stop();
    },
  };
}
