/**
 * A run folder: the resolved config (run.json), the episode cache (cache.sqlite), one JSONL row
 * per completed unit (results.jsonl, appended as units finish), and what the report writes
 * (results.csv, report.md, plots/). Re-running with the same folder skips units already in
 * results.jsonl, and the cache makes any episode already played free.
 */
import { appendFileSync, closeSync, existsSync, fsyncSync, mkdirSync, openSync, readFileSync, renameSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { EpisodeCache } from '../../drivers/index.ts';
import { ExpError } from './errors.ts';
import { targetCopy } from '../../policies/targets/lm/vendor.ts';

/** Files of a run folder. */
export const RUN_FILES = {
  meta: 'run.json',
  results: 'results.jsonl',
  cache: 'cache.sqlite',
  csv: 'results.csv',
  report: 'report.md',
  plots: 'plots',
  timing: 'timing.json',
  /** the report's tables as JSON (experiments/report/summary.ts) */
  summary: 'summary.json',
  /** every scalar, one per row (experiments/report/scalars.ts) */
  scalars: 'scalars.csv',
} as const;

/** What run.json holds: everything the report needs besides the results. */
export interface RunMeta {
  kind: 'hr1-exp/1';
  exp: string;
  /** the resolved options (without where the run folder is) */
  config: Record<string, unknown>;
  /** every target the run uses, and which of them are SIMULATED */
  targets: string[];
  /** the target each env ran (exp main with a target per env; absent: every env ran targets[0]) */
  targetByEnv?: Record<string, string>;
  simulated: string[];
  /**
   * the copy of each learned (lm/) target that played on the machine that ran the driver: its
   * build cache or the vendored zoo, and the sha256 of its model.onnx (null: neither is there);
   * written by writeMeta
   */
  models?: Record<string, { source: 'built' | 'vendored'; sha256: string } | null>;
  /** methods named by the config: kind, and whether they could run (a reason when not) */
  methods: {
    name: string;
    kind: string;
    label: string;
    /** one patch for every packet (one unit per env and target) */ fixed?: boolean;
    available: true | string;
    /** a configured method's version (it keys the method's units) and settings (e.g. llm-editor's endpoint and sampling) */
    version?: string;
    settings?: Record<string, unknown>;
  }[];
  /** per env: the train and test splits and the number of test tasks */
  splits: Record<string, { train: string; test: string[]; testTasks: number; seeds: number[] }>;
  /**
   * the episode sets checked to share no (task, seed) before the run started (the packets, the
   * test episodes, and the SFT and GRPO episodes of each engineer the run uses), with where each
   * engineer was trained and on which target
   */
  disjoint?: { sets: { name: string; env: string; episodes: number; tasks: number; seeds: [number, number] | null }[]; engineers: Record<string, { dir: string; target: string; targets?: string[]; split: string; sftRows?: number; abstainRows?: number }> };
}

/** One completed unit (an evaluation of one patch on one env's test episodes, or similar). */
export interface ResultRow {
  key: string;
  [field: string]: unknown;
}

function write(path: string, text: string): void {
  const tmp = `${path}.tmp`;
  writeFileSync(tmp, text);
  renameSync(tmp, path);
}

export class RunDir {
  readonly dir: string;
  private cacheInst: EpisodeCache | null = null;
  private done = new Map<string, ResultRow>();

  constructor(dir: string, opts: { create?: boolean } = {}) {
    this.dir = dir;
    if (opts.create ?? true) mkdirSync(dir, { recursive: true });
    else if (!existsSync(join(dir, RUN_FILES.meta))) throw new ExpError('EXP_RUN_DIR', `${dir} is not a run folder (no ${RUN_FILES.meta}); pass the folder an hr1 exp command wrote`, { data: { dir } });
    this.load();
  }

  path(name: string): string {
    return join(this.dir, name);
  }

  /** The run's episode cache (opened on first use). */
  get cache(): EpisodeCache {
    this.cacheInst ??= new EpisodeCache(this.path(RUN_FILES.cache));
    return this.cacheInst;
  }

  private load(): void {
    const file = this.path(RUN_FILES.results);
    if (!existsSync(file)) return;
    let text = readFileSync(file, 'utf8');
    // a run killed mid-write leaves a partial last line: drop it, the unit runs again
    const end = text.lastIndexOf('\n') + 1;
    if (end < text.length) {
      truncateSync(file, Buffer.byteLength(text.slice(0, end)));
      text = text.slice(0, end);
    }
    for (const line of text.split('\n')) {
      if (!line.trim()) continue;
      const row = JSON.parse(line) as ResultRow;
      this.done.set(row.key, row);
    }
  }

  has(key: string): boolean {
    return this.done.has(key);
  }

  get(key: string): ResultRow | undefined {
    return this.done.get(key);
  }

  /** Rows in the order they were appended. */
  rows(): ResultRow[] {
    return [...this.done.values()];
  }

  /** Append a completed unit (one line, flushed to disk before it counts as done). */
  append(row: ResultRow): void {
    if (this.done.has(row.key)) return;
    const fd = openSync(this.path(RUN_FILES.results), 'a');
    try {
      appendFileSync(fd, `${JSON.stringify(row)}\n`);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    this.done.set(row.key, row);
  }

  writeMeta(meta: RunMeta): void {
    const lm = meta.targets.filter((t) => t.startsWith('lm/'));
    if (lm.length > 0 && meta.models === undefined) {
      const copy = (t: string) => {
        const id = targetCopy(t);
        return id ? { source: id.source, sha256: id.sha256 } : null;
      };
      meta = { ...meta, models: Object.fromEntries(lm.map((t) => [t, copy(t)])) };
    }
    write(this.path(RUN_FILES.meta), `${JSON.stringify(meta, null, 2)}\n`);
  }

  readMeta(): RunMeta {
    const file = this.path(RUN_FILES.meta);
    if (!existsSync(file)) throw new ExpError('EXP_RUN_DIR', `${this.dir} has no ${RUN_FILES.meta}; pass the folder an hr1 exp command wrote`, { data: { dir: this.dir } });
    return JSON.parse(readFileSync(file, 'utf8')) as RunMeta;
  }

  writeFile(name: string, data: string | Uint8Array): void {
    const p = this.path(name);
    mkdirSync(join(p, '..'), { recursive: true });
    const tmp = `${p}.tmp`;
    writeFileSync(tmp, data);
    renameSync(tmp, p);
  }

  close(): void {
    this.cacheInst?.close();
    this.cacheInst = null;
  }
}
