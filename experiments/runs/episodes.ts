/**
 * The episodes of a run folder. Exp runs: one reference per outcome of results.jsonl (the row
 * gives the method, packet, variant and patch); train runs: one per row of episodes.sqlite (method
 * `vanilla` for no patch, `patch:<hash8>` otherwise). Records come from the run's episode cache,
 * by their exact key where it can be rebuilt (drivers/rollout.ts rolloutKeys), else by env, task,
 * seed, patch and target (the newest of its versions).
 */
import Database from 'better-sqlite3';
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { unpack } from '../../cluster/codec.ts';
import { rolloutKeys } from '../../drivers/rollout.ts';
import { EpisodeRecordSchema, type EpisodeRecord, type Patch } from '../../harness/index.ts';
import { targetOptionsByTarget } from '../../policies/targets/options.ts';
import { envOptionsFor, type EvalRow } from '../runner/evaluate.ts';
import { RUN_FILES, type RunMeta } from '../runner/run-dir.ts';
import { RunsError } from './errors.ts';
import { readJsonl, requireRun, TRAIN_FILES, type RunKind } from './list.ts';

/** One episode of a run folder. */
export interface EpisodeRef {
  env: string;
  /** the target spec (without the cache's version suffix) */
  target: string;
  /** exp: the method of the row; train: `vanilla` or `patch:<first 8 hex of the patch hash>` */
  method: string;
  /** the packet index of the row (null: a fixed patch, or a train run) */
  packet: number | null;
  /** the experiment's variant ('' if none) */
  variant: string;
  taskId: string;
  seed: number;
  won: boolean;
  reward: number;
  /** sha256 of the canonical patch, '' for none */
  patchHash: string;
  /** train runs: the episode's key in episodes.sqlite */
  key?: string;
}

/** Which episodes to list; every given field must match. */
export interface EpisodeFilter {
  env?: string;
  target?: string;
  method?: string;
  taskId?: string;
  seed?: number;
  won?: boolean;
  packet?: number | null;
  variant?: string;
  patchHash?: string;
}

/** The keys of {@link EpisodeFilter}, as `--filter key=value` takes them. */
export const EPISODE_FILTER_KEYS = ['env', 'target', 'method', 'taskId', 'seed', 'won', 'packet', 'variant', 'patchHash'] as const satisfies readonly (keyof EpisodeFilter)[];

/** An episode with what explains it. */
export interface EpisodeView {
  record: EpisodeRecord;
  /** the patch in canonical form (exp: the row's; train: from sft*.jsonl or GRPO's candidates.jsonl), null for none or unknown */
  patch: Patch | null;
  /** the same env, task, seed and target without a patch, when the cache holds it */
  vanilla: EpisodeRecord | null;
  /** {@link firstDivergence} of the two; null when identical or without a vanilla episode */
  divergence: number | null;
}

/**
 * The index (into `steps`) of the first step whose executed action or observation differs
 * between two episodes; where one ends first, the length of the shorter; null when the steps are
 * identical.
 *
 * @example
 * firstDivergence(patched, vanilla) // 3: the fourth step is the first the patch changed
 */
export function firstDivergence(a: EpisodeRecord, b: EpisodeRecord): number | null {
  const n = Math.min(a.steps.length, b.steps.length);
  for (let i = 0; i < n; i++) {
    const x = a.steps[i]!;
    const y = b.steps[i]!;
    if (x.action !== y.action || x.observation !== y.observation) return i;
  }
  return a.steps.length === b.steps.length ? null : n;
}

/**
 * `key=value` pairs as an {@link EpisodeFilter}: `seed` and `packet` are integers (`packet=none`
 * for fixed patches), `won` is true/false (or 1/0); a {@link RunsError} `RUNS_BAD_FILTER` naming
 * the pair and the accepted keys otherwise.
 *
 * @example
 * parseEpisodeFilter(['method=prompted-editor', 'won=false']) // { method: 'prompted-editor', won: false }
 */
export function parseEpisodeFilter(pairs: readonly string[]): EpisodeFilter {
  const f: EpisodeFilter = {};
  const keys = EPISODE_FILTER_KEYS.join(', ');
  for (const pair of pairs) {
    const eq = pair.indexOf('=');
    if (eq <= 0) throw new RunsError('RUNS_BAD_FILTER', `--filter "${pair}" is not key=value; write e.g. --filter method=vanilla (keys: ${keys})`, { filter: pair });
    const key = pair.slice(0, eq).trim();
    const value = pair.slice(eq + 1).trim();
    if (!(EPISODE_FILTER_KEYS as readonly string[]).includes(key)) throw new RunsError('RUNS_BAD_FILTER', `--filter "${pair}": unknown key "${key}"; use one of ${keys}`, { filter: pair, key });
    const k = key as (typeof EPISODE_FILTER_KEYS)[number];
    if (k === 'seed') {
      if (!/^-?\d+$/.test(value)) throw new RunsError('RUNS_BAD_FILTER', `--filter "${pair}": seed must be an integer, got "${value}"`, { filter: pair, key });
      f.seed = Number(value);
    } else if (k === 'packet') {
      if (value === 'none' || value === 'null' || value === '') f.packet = null;
      else if (/^\d+$/.test(value)) f.packet = Number(value);
      else throw new RunsError('RUNS_BAD_FILTER', `--filter "${pair}": packet must be an integer or "none" (fixed patches), got "${value}"`, { filter: pair, key });
    } else if (k === 'won') {
      const v = value.toLowerCase();
      if (v === 'true' || v === '1' || v === 'yes') f.won = true;
      else if (v === 'false' || v === '0' || v === 'no') f.won = false;
      else throw new RunsError('RUNS_BAD_FILTER', `--filter "${pair}": won must be true or false, got "${value}"`, { filter: pair, key });
    } else f[k] = value;
  }
  return f;
}

function matches(r: EpisodeRef, f: EpisodeFilter): boolean {
  for (const k of EPISODE_FILTER_KEYS) {
    const want = f[k];
    if (want === undefined) continue;
    if (r[k] !== want) return false;
  }
  return true;
}

/** `sim/x@3` → `sim/x`; `lm/x@hash/s1` → `lm/x`. */
function baseTarget(column: string): string {
  const at = column.indexOf('@');
  return at < 0 ? column : column.slice(0, at);
}

function decode(blob: Buffer): EpisodeRecord | null {
  try {
    const r = EpisodeRecordSchema.safeParse(unpack(blob));
    return r.success ? r.data : null;
  } catch {
    return null;
  }
}

const stampOf = (files: readonly string[]) => files.map((f) => (existsSync(f) ? `${statSync(f).size}|${statSync(f).mtimeMs}` : '-')).join(',');

// episode lists by run folder, kept while its files are unchanged (a dashboard lists often)
const listMemo = new Map<string, { stamp: string; refs: EpisodeRef[] }>();

/**
 * The episodes of a run folder, filtered; exp runs in results.jsonl order, train runs in the
 * order they were played. A {@link RunsError} `RUNS_NOT_A_RUN` when the folder is no run.
 *
 * @example
 * listEpisodes('runs/main-1a2b3c4d5e', { method: 'prompted-editor', won: false })
 */
export function listEpisodes(runDir: string, filter: EpisodeFilter = {}): EpisodeRef[] {
  const kind = requireRun(runDir);
  const files = kind === 'exp' ? [join(runDir, RUN_FILES.results)] : [join(runDir, TRAIN_FILES.cache), join(runDir, `${TRAIN_FILES.cache}-wal`)];
  const stamp = stampOf(files);
  let hit = listMemo.get(runDir);
  if (hit?.stamp !== stamp) {
    hit = { stamp, refs: kind === 'exp' ? expRefs(runDir) : trainRefs(runDir) };
    listMemo.set(runDir, hit);
  }
  return hit.refs.filter((r) => matches(r, filter));
}

function expRows(runDir: string): EvalRow[] {
  return readJsonl<EvalRow>(join(runDir, RUN_FILES.results)).filter((r) => r.kind === 'eval' && Array.isArray(r.outcomes));
}

function expRefs(runDir: string): EpisodeRef[] {
  return expRows(runDir).flatMap((r) =>
    r.outcomes.map(([taskId, seed, won, reward]) => ({ env: r.env, target: r.target, method: r.method, packet: r.packet ?? null, variant: r.variant ?? '', taskId, seed, won: won === 1, reward, patchHash: r.patchHash })),
  );
}

function openCache(file: string): Database.Database | null {
  if (!existsSync(file)) return null;
  return new Database(file, { readonly: true, fileMustExist: true });
}

function trainRefs(runDir: string): EpisodeRef[] {
  const db = openCache(join(runDir, TRAIN_FILES.cache));
  if (!db) return [];
  try {
    const rows = db.prepare('SELECT key, env, task, seed, target, patch, record FROM episodes ORDER BY created, rowid').all() as { key: string; env: string; task: string; seed: number; target: string; patch: string; record: Buffer }[];
    return rows.flatMap((r) => {
      const rec = decode(r.record);
      if (!rec) return [];
      return [{ env: r.env, target: baseTarget(r.target), method: r.patch ? `patch:${r.patch.slice(0, 8)}` : 'vanilla', packet: null, variant: '', taskId: r.task, seed: r.seed, won: rec.outcome.won, reward: rec.outcome.reward, patchHash: r.patch, key: r.key }];
    });
  } finally {
    db.close();
  }
}

/**
 * Reads records of one run folder with its cache open (for many episodes, e.g. an export); close
 * it when done. {@link readEpisode} is this for one episode.
 */
export class EpisodeReader {
  readonly kind: RunKind;
  private db: Database.Database | null;
  private rows: EvalRow[] = [];
  private meta: RunMeta | null = null;
  private keyMemo = new Map<string, Map<string, string>>();
  private sftPatches: Map<string, Patch> | null = null;

  constructor(readonly runDir: string) {
    this.kind = requireRun(runDir);
    this.db = openCache(join(runDir, this.kind === 'exp' ? RUN_FILES.cache : TRAIN_FILES.cache));
    if (this.kind === 'exp') {
      this.rows = expRows(runDir);
      this.meta = JSON.parse(readFileSync(join(runDir, RUN_FILES.meta), 'utf8')) as RunMeta;
    }
  }

  /** The episode's record, its patch, its vanilla counterpart and where they part. */
  view(ref: EpisodeRef): EpisodeView {
    const record = this.record(ref);
    if (!record) throw new RunsError('RUNS_NO_EPISODE', `${this.runDir}: the episode cache holds no record of ${ref.method} on ${ref.env} ${ref.taskId} seed ${ref.seed} (${ref.target}); the cache file was deleted or replaced: rerun the command that wrote the folder`, { ref });
    const vanilla = ref.patchHash === '' ? record : this.vanillaOf(ref);
    return { record, patch: this.patchOf(ref), vanilla, divergence: vanilla && vanilla !== record ? firstDivergence(record, vanilla) : null };
  }

  /** The episode's record, or null when the cache does not hold it. */
  record(ref: EpisodeRef): EpisodeRecord | null {
    if (!this.db) return null;
    if (ref.key) {
      const r = this.db.prepare('SELECT record FROM episodes WHERE key = ?').get(ref.key) as { record: Buffer } | undefined;
      const rec = r ? decode(r.record) : null;
      if (rec) return rec;
    }
    const row = this.rowOf(ref);
    if (row) {
      const key = this.exactKey(row, ref.patchHash === '' ? null : row.patch, row, ref);
      const rec = key ? this.byKey(key) : null;
      if (rec) return rec;
    }
    return this.byColumns(ref, ref.patchHash);
  }

  /** The unpatched episode of the same env, task, seed and target. */
  vanillaOf(ref: EpisodeRef): EpisodeRecord | null {
    if (!this.db) return null;
    if (this.kind === 'exp') {
      const van = this.rows.find((r) => r.method === 'vanilla' && r.env === ref.env && r.target === ref.target && r.patchHash === '' && r.outcomes.some((o) => o[0] === ref.taskId && o[1] === ref.seed));
      const basis = van ?? this.rowOf(ref);
      const key = basis ? this.exactKey(basis, null, basis, ref) : null;
      const rec = key ? this.byKey(key) : null;
      if (rec) return rec;
    }
    return this.byColumns(ref, '');
  }

  private patchOf(ref: EpisodeRef): Patch | null {
    if (ref.patchHash === '') return null;
    if (this.kind === 'exp') return (this.rowOf(ref)?.patch as Patch | null | undefined) ?? null;
    if (!this.sftPatches) {
      this.sftPatches = new Map();
      // SFT rows, and GRPO's candidates (candidates.jsonl)
      for (const f of readdirSync(this.runDir).filter((n) => /^sft(-.+)?\.jsonl$/.test(n) || n === 'candidates.jsonl')) {
        for (const r of readJsonl<{ patchHash?: string; patch?: Patch }>(join(this.runDir, f))) if (r.patchHash && r.patch) this.sftPatches.set(r.patchHash, r.patch);
      }
    }
    return this.sftPatches.get(ref.patchHash) ?? null;
  }

  private rowOf(ref: EpisodeRef): EvalRow | undefined {
    return this.rows.find((r) => r.env === ref.env && r.target === ref.target && r.method === ref.method && (r.packet ?? null) === ref.packet && (r.variant ?? '') === ref.variant && r.patchHash === ref.patchHash && r.outcomes.some((o) => o[0] === ref.taskId && o[1] === ref.seed));
  }

  /** The cache key the runner used for this episode: the row's episodes decide the env options, run.json the target settings. */
  private exactKey(row: EvalRow, patch: unknown, episodesOf: EvalRow, ref: EpisodeRef): string | null {
    const memoKey = `${row.key}|${patch === null ? 'vanilla' : 'patched'}|${episodesOf.key}`;
    let keys = this.keyMemo.get(memoKey);
    if (!keys) {
      try {
        const episodes = episodesOf.outcomes.map(([taskId, seed]) => ({ taskId, seed }));
        const to = this.meta ? targetOptionsByTarget(this.meta.targets, this.meta.config.targetOptions, { path: `${this.meta.exp}.targetOptions`, envs: Object.keys(this.meta.splits), flags: true }).get(row.target) : undefined;
        const { hashes } = rolloutKeys({ env: row.env, target: row.target, patch, episodes, envOptions: envOptionsFor(row.env, episodes, {}), ...(to ? { targetOptions: { ...to } } : {}) });
        keys = new Map(episodes.map((e, i) => [`${e.taskId}\u0000${e.seed}`, hashes[i]!]));
      } catch {
        // an env, target or patch this hr1 no longer knows: the columns find it
        keys = new Map();
      }
      this.keyMemo.set(memoKey, keys);
    }
    return keys.get(`${ref.taskId}\u0000${ref.seed}`) ?? null;
  }

  private byKey(key: string): EpisodeRecord | null {
    const r = this.db!.prepare('SELECT record FROM episodes WHERE key = ?').get(key) as { record: Buffer } | undefined;
    return r ? decode(r.record) : null;
  }

  /** By env, task, seed, patch and target (any version of it: the newest). */
  private byColumns(ref: EpisodeRef, patch: string): EpisodeRecord | null {
    const rows = this.db!.prepare("SELECT record FROM episodes WHERE env = ? AND task = ? AND seed = ? AND patch = ? AND (target = ? OR substr(target, 1, ?) = ?) ORDER BY created DESC, rowid DESC").all(ref.env, ref.taskId, ref.seed, patch, ref.target, ref.target.length + 1, `${ref.target}@`) as { record: Buffer }[];
    for (const r of rows) {
      const rec = decode(r.record);
      if (rec) return rec;
    }
    return null;
  }

  close(): void {
    this.db?.close();
    this.db = null;
  }
}

/**
 * One episode of a run folder with its patch and its unpatched counterpart.
 *
 * @example
 * const [ref] = listEpisodes(dir, { method: 'prompted-editor', won: true });
 * const { record, vanilla, divergence } = readEpisode(dir, ref!);
 */
export function readEpisode(runDir: string, ref: EpisodeRef): EpisodeView {
  const r = new EpisodeReader(runDir);
  try {
    return r.view(ref);
  } finally {
    r.close();
  }
}
