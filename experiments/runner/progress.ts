/**
 * Progress on stderr: cli-progress bars (units, and the episodes of the current unit) when stderr
 * is a TTY, one line per finished unit otherwise, nothing when silent.
 */
import cliProgress from 'cli-progress';

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

export function makeProgress(mode: ProgressMode = 'auto', stream: NodeJS.WriteStream = process.stderr): Progress {
  const m = mode === 'auto' ? (stream.isTTY ? 'bars' : 'lines') : mode;
  let units = 0;
  let finished = 0;
  if (m === 'silent') return { start() {}, episodes() {}, done() {}, log() {}, total() {}, stop() {} };
  if (m === 'lines') {
    return {
      start() {},
      episodes() {},
      done(label, i) {
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
      stop() {},
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
