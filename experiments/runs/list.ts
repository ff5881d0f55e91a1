/**
 * Run folders as data: which subfolders of a runs directory are runs (`hr1 exp`: run.json;
 * `hr1 train`: config.json + iterations.jsonl), what they ran and how far they are.
 */
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { basename, join } from 'node:path';
import type { EvalRow } from '../runner/evaluate.ts';
import { RUN_FILES, type RunMeta } from '../runner/run-dir.ts';
import { summarizeRun, type RunSummary } from '../report/summary.ts';
import type { IterationLog } from '../train.ts';
import { RunsError } from './errors.ts';

/** Files of a train run folder (experiments/train.ts). */
export const TRAIN_FILES = {
  config: 'config.json',
  iterations: 'iterations.jsonl',
  state: 'state.json',
  cache: 'episodes.sqlite',
  engineer: 'engineer.onnx',
  scalars: 'scalars.csv',
  plots: 'plots',
} as const;

export type RunKind = 'exp' | 'train';

/** One run folder, as {@link listRuns} finds it. */
export interface RunInfo {
  /** the folder's name (unique under its runs directory) */
  name: string;
  path: string;
  kind: RunKind;
  /** the experiment (main, sweep, …) of an exp run */
  exp?: string;
  envs: string[];
  targets: string[];
  /** exp: the methods of run.json; train: none */
  methods: string[];
  /**
   * exp: units in results.jsonl vs the units the experiment plans (exp main: from run.json;
   * others: from timing.json once the run finished, else null); train: iterations logged vs the
   * config's SFT epochs + GRPO iterations
   */
  progress: { done: number; total: number | null };
  /** exp: timing.json written after the last unit; train: engineer.onnx written */
  finished: boolean;
  /** the newest modification of the run's files, ms since the epoch */
  mtime: number;
}

/** What a train run's iterations add up to. */
export interface TrainSummary {
  kind: 'hr1-train-summary/1';
  sft: { epochs: number; firstLoss: number | null; lastLoss: number | null };
  grpo: { iterations: number; meanDelta: number | null; lastMeanDelta: number | null; bestDelta: number | null; meanValidRate: number | null; lastEntropy: number | null };
}

/** A run folder in full: {@link RunInfo}, its meta (run.json or config.json), summary and plot files. */
export interface RunDetail extends RunInfo {
  meta: RunMeta | Record<string, unknown>;
  /** exp: summary.json (computed from results.jsonl while the run has none yet); train: from iterations.jsonl */
  summary: RunSummary | TrainSummary | null;
  /** file names under plots/ (svg and png), sorted */
  plots: string[];
  /** file names in the folder, sorted */
  files: string[];
}

/** The kind of run a folder holds, or null when it is none. */
export function runKindOf(dir: string): RunKind | null {
  if (existsSync(join(dir, RUN_FILES.meta))) return 'exp';
  if (existsSync(join(dir, TRAIN_FILES.config)) && existsSync(join(dir, TRAIN_FILES.iterations))) return 'train';
  return null;
}

/** A folder's run kind; a {@link RunsError} naming the fix when it is not a run folder. */
export function requireRun(dir: string): RunKind {
  if (!existsSync(dir) || !statSync(dir).isDirectory()) throw new RunsError('RUNS_NOT_A_RUN', `${dir}: no such folder; pass a run folder that hr1 exp or hr1 train wrote (e.g. runs/main-<hash>)`, { dir });
  const kind = runKindOf(dir);
  if (!kind) throw new RunsError('RUNS_NOT_A_RUN', `${dir} is not a run folder (no ${RUN_FILES.meta}, nor ${TRAIN_FILES.config} with ${TRAIN_FILES.iterations}); pass a folder that hr1 exp or hr1 train wrote (e.g. runs/main-<hash>)`, { dir });
  return kind;
}

/** JSON lines of a file; a torn last line (a run writing it now) is left out. */
export function readJsonl<T>(file: string): T[] {
  if (!existsSync(file)) return [];
  const out: T[] = [];
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    if (!line.trim()) continue;
    try {
      out.push(JSON.parse(line) as T);
    } catch {
      // a line being written
    }
  }
  return out;
}

function readJson(file: string): Record<string, unknown> {
  return JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
}

function mtimeOf(dir: string, names: readonly string[]): number {
  let m = 0;
  for (const n of names) {
    const p = join(dir, n);
    if (existsSync(p)) m = Math.max(m, statSync(p).mtimeMs);
  }
  return Math.round(m);
}

/** exp main's unit count from run.json: per env, one unit per fixed method (older run.json: per baseline) and one per packet of any other available method. */
function plannedUnits(meta: RunMeta): number | null {
  if (meta.exp !== 'main') return null;
  const packets = (meta.config.train as { packets?: number } | undefined)?.packets;
  if (typeof packets !== 'number') return null;
  const perEnv = meta.methods.filter((m) => m.available === true).reduce((n, m) => n + ((m.fixed ?? m.kind === 'baseline') ? 1 : packets), 0);
  return perEnv * Object.keys(meta.splits).length;
}

function expInfo(dir: string): RunInfo {
  const meta = JSON.parse(readFileSync(join(dir, RUN_FILES.meta), 'utf8')) as RunMeta;
  const done = readJsonl(join(dir, RUN_FILES.results)).length;
  const timingFile = join(dir, RUN_FILES.timing);
  const timing = existsSync(timingFile) ? (readJson(timingFile) as { ran?: number; skipped?: number }) : null;
  const total = plannedUnits(meta) ?? (timing ? (timing.ran ?? 0) + (timing.skipped ?? 0) : null);
  return {
    name: basename(dir),
    path: dir,
    kind: 'exp',
    exp: meta.exp,
    envs: Object.keys(meta.splits ?? {}),
    targets: [...(meta.targets ?? [])],
    methods: (meta.methods ?? []).map((m) => m.name),
    progress: { done, total },
    finished: timing !== null && (total === null || done >= total),
    mtime: mtimeOf(dir, [RUN_FILES.meta, RUN_FILES.results, RUN_FILES.timing, RUN_FILES.report]),
  };
}

function trainInfo(dir: string): RunInfo {
  const cfg = readJson(join(dir, TRAIN_FILES.config)) as { env?: string; target?: string; sft?: { epochs?: number }; grpo?: { iterations?: number } };
  const envs = String(cfg.env ?? '').split(',').map((e) => e.trim()).filter(Boolean);
  const targets = [...new Set(String(cfg.target ?? '').split(',').map((t) => t.trim()).filter(Boolean))];
  const its = readJsonl<IterationLog>(join(dir, TRAIN_FILES.iterations));
  const total = (cfg.sft?.epochs ?? 0) + (cfg.grpo?.iterations ?? 0);
  const finished = existsSync(join(dir, TRAIN_FILES.engineer));
  return {
    name: basename(dir),
    path: dir,
    kind: 'train',
    envs,
    targets,
    methods: [],
    // SFT without data runs no epochs: a finished run counts as complete
    progress: { done: finished ? total : Math.min(its.length, total), total },
    finished,
    mtime: mtimeOf(dir, [TRAIN_FILES.config, TRAIN_FILES.iterations, TRAIN_FILES.state, TRAIN_FILES.engineer]),
  };
}

/** The run of one folder; a {@link RunsError} when it is none. */
export function runInfo(dir: string): RunInfo {
  return requireRun(dir) === 'exp' ? expInfo(dir) : trainInfo(dir);
}

/** How deep {@link listRuns} looks for run folders (`runs/engineers/<hash>/<env>` is 3). @default 3 */
export const RUN_SEARCH_DEPTH = 3;

/**
 * The run folders under `runsDir` (a missing directory has none), newest first: its subfolders,
 * and inside a subfolder that is not a run, theirs (down to RUN_SEARCH_DEPTH; e.g. the engineers
 * `hr1 exp main` trains under runs/engineers/<hash>/<env>). A run's name is its path relative to
 * `runsDir`. A folder whose files cannot be read (being written) is left out rather than failing
 * the list.
 *
 * @example
 * for (const r of listRuns('runs')) console.log(r.name, r.kind, `${r.progress.done}/${r.progress.total ?? '?'}`);
 */
export function listRuns(runsDir: string): RunInfo[] {
  if (!existsSync(runsDir)) return [];
  const out: RunInfo[] = [];
  const walk = (dir: string, rel: string, depth: number): void => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      if (!e.isDirectory()) continue;
      const sub = join(dir, e.name);
      const name = rel ? `${rel}/${e.name}` : e.name;
      if (!runKindOf(sub)) {
        if (depth < RUN_SEARCH_DEPTH) walk(sub, name, depth + 1);
        continue;
      }
      try {
        out.push({ ...runInfo(sub), name });
      } catch {
        // run.json or config.json mid-write: listed on the next call
      }
    }
  };
  walk(runsDir, '', 1);
  return out.sort((a, b) => b.mtime - a.mtime || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

const numOrNull = (x: number | undefined) => (x === undefined || !Number.isFinite(x) ? null : x);
const meanOrNull = (xs: number[]) => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : null);

/** What a train run's iterations add up to. */
export function trainSummary(iterations: readonly IterationLog[]): TrainSummary {
  const sft = iterations.filter((x) => x.phase === 'sft');
  const g = iterations.filter((x) => x.phase === 'grpo');
  const defined = (f: (x: IterationLog) => number | undefined) => g.map(f).filter((v): v is number => v !== undefined && Number.isFinite(v));
  return {
    kind: 'hr1-train-summary/1',
    sft: { epochs: sft.length, firstLoss: numOrNull(sft[0]?.loss), lastLoss: numOrNull(sft[sft.length - 1]?.loss) },
    grpo: {
      iterations: g.length,
      meanDelta: meanOrNull(defined((x) => x.meanDelta)),
      lastMeanDelta: numOrNull(g[g.length - 1]?.meanDelta),
      bestDelta: defined((x) => x.bestDelta).reduce<number | null>((a, b) => (a === null || b > a ? b : a), null),
      meanValidRate: meanOrNull(defined((x) => x.validRate)),
      lastEntropy: numOrNull(g[g.length - 1]?.entropy),
    },
  };
}

// summaries computed from results.jsonl (a run without summary.json yet), by the file's size and time
const summaryMemo = new Map<string, { stamp: string; summary: RunSummary }>();

function expSummary(dir: string, meta: RunMeta): RunSummary | null {
  const file = join(dir, RUN_FILES.summary);
  if (existsSync(file)) {
    try {
      return JSON.parse(readFileSync(file, 'utf8')) as RunSummary;
    } catch {
      // being written: computed below
    }
  }
  const results = join(dir, RUN_FILES.results);
  if (!existsSync(results)) return null;
  const st = statSync(results);
  const stamp = `${st.size}|${st.mtimeMs}`;
  const hit = summaryMemo.get(dir);
  if (hit?.stamp === stamp) return hit.summary;
  const rows = readJsonl<EvalRow>(results).filter((r) => r.kind === 'eval');
  if (rows.length === 0) return null;
  const summary = summarizeRun(meta, rows);
  summaryMemo.set(dir, { stamp, summary });
  return summary;
}

/**
 * One run folder in full: what {@link listRuns} says of it, its meta, its summary and the names of
 * its plot files. A {@link RunsError} `RUNS_NOT_A_RUN` when the folder is no run.
 *
 * @example
 * const r = readRun('runs/main-1a2b3c4d5e');
 * r.plots // ['main-delta.png', 'main-delta.svg', …]
 */
export function readRun(dir: string): RunDetail {
  const info = runInfo(dir);
  const plotsDir = join(dir, RUN_FILES.plots);
  const plots = existsSync(plotsDir) ? readdirSync(plotsDir).filter((f) => /\.(svg|png)$/.test(f)).sort() : [];
  const files = readdirSync(dir).sort();
  if (info.kind === 'exp') {
    const meta = JSON.parse(readFileSync(join(dir, RUN_FILES.meta), 'utf8')) as RunMeta;
    return { ...info, meta, summary: expSummary(dir, meta), plots, files };
  }
  const meta = readJson(join(dir, TRAIN_FILES.config));
  return { ...info, meta, summary: trainSummary(readJsonl<IterationLog>(join(dir, TRAIN_FILES.iterations))), plots, files };
}
