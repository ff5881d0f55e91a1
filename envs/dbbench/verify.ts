/**
 * `hr1 envs verify dbbench`: the expert on every task, per type and backend, against a stated
 * threshold; and `hr1 bench envs dbbench`: episode set-up and query-step rates.
 */
import type { Backend } from './backend.ts';
import { DbbenchError } from './errors.ts';
import { closeEpisode, expertActions, reset, step, useBackend, type DbbenchState } from './env.ts';
import { compareFc } from './protocol.ts';
import { isWriteType, loadTasks, SHIPPED_SETS, type DbbenchTask, type DbbenchVariant } from './tasks.ts';

/** share of tasks the expert must solve: MariaDB/MySQL is the real thing, SQLite an emulation */
export const VERIFY_THRESHOLDS = { mysql: 0.99, sqlite: 0.97 } as const;

export interface VerifyOptions {
  /** a shipped set or a jsonl path; @default every shipped set */
  file?: string;
  variant?: DbbenchVariant;
  /** 'sqlite' (default) or mysql://user:password@host:port */
  db?: string | Backend;
  /** override the threshold (0..1) */
  threshold?: number;
  /** called after each task */
  onTask?: (r: VerifyTaskResult) => void;
}

export interface VerifyTaskResult {
  taskId: string;
  type: string;
  matched: boolean;
  /** writes: the table hash the replay produced; reads: the reference SQL's response */
  got: string;
  /** reads: whether the reference SQL's own result matches the label (informational) */
  sqlAgrees?: boolean;
}

export interface VerifyRow {
  type: string;
  matched: number;
  total: number;
}

export interface VerifyResult {
  backend: string;
  files: string[];
  perType: VerifyRow[];
  matched: number;
  total: number;
  rate: number;
  threshold: number;
  ok: boolean;
  misses: VerifyTaskResult[];
  /** reads whose reference SQL alone reproduces the label, on this backend (informational) */
  readSqlAgreement: { agree: number; total: number };
}

async function runExpert(task: DbbenchTask, db: Backend): Promise<VerifyTaskResult> {
  const r = await reset(task, { db, seed: 0 });
  let state: DbbenchState = r.state;
  let firstObservation: string | null = null;
  try {
    for (const action of expertActions(task)) {
      const s = await step(state, action);
      state = s.state;
      firstObservation ??= s.observation;
      if (s.done) {
        const out: VerifyTaskResult = {
          taskId: task.id,
          type: task.type,
          matched: s.reward === 1,
          got: isWriteType(task.type) ? (s.info.answer ?? '') : (firstObservation ?? ''),
        };
        if (!isWriteType(task.type) && task.sqlQuery) out.sqlAgrees = compareFc(firstObservation ?? '', task.label, task.type);
        return out;
      }
    }
    throw new DbbenchError('DBBENCH_BAD_ACTION', `the expert did not finish task ${task.id}`, { taskId: task.id });
  } finally {
    await closeEpisode(state.episodeId);
  }
}

/**
 * Replay the expert on every task and check it scores.
 *
 * @example
 * const v = await verifyDbbench({ db: 'mysql://root@127.0.0.1:3306' });
 * if (!v.ok) process.exitCode = 1;
 */
export async function verifyDbbench(opts: VerifyOptions = {}): Promise<VerifyResult> {
  const backend = useBackend(opts.db ?? 'sqlite');
  const files = opts.file ? [opts.file] : Object.keys(SHIPPED_SETS);
  const threshold = opts.threshold ?? VERIFY_THRESHOLDS[backend.kind];
  if (!(threshold >= 0 && threshold <= 1)) {
    throw new DbbenchError('DBBENCH_BAD_OPTION', `options.threshold must be between 0 and 1, got ${String(opts.threshold)}`, { threshold });
  }
  const rows = new Map<string, VerifyRow>();
  const misses: VerifyTaskResult[] = [];
  let agree = 0;
  let reads = 0;
  for (const file of files) {
    const loadOpts: { file: string; variant?: DbbenchVariant } = { file };
    if (opts.variant) loadOpts.variant = opts.variant;
    for (const task of loadTasks(loadOpts)) {
      const r = await runExpert(task, backend);
      const row = rows.get(task.type) ?? { type: task.type, matched: 0, total: 0 };
      row.total++;
      if (r.matched) row.matched++;
      else misses.push(r);
      rows.set(task.type, row);
      if (r.sqlAgrees !== undefined) {
        reads++;
        if (r.sqlAgrees) agree++;
      }
      opts.onTask?.(r);
    }
  }
  const perType = [...rows.values()].sort((a, b) => a.type.localeCompare(b.type));
  const matched = perType.reduce((s, r) => s + r.matched, 0);
  const total = perType.reduce((s, r) => s + r.total, 0);
  const rate = total === 0 ? 0 : matched / total;
  return { backend: backend.key, files, perType, matched, total, rate, threshold, ok: total > 0 && rate >= threshold, misses, readSqlAgreement: { agree, total: reads } };
}

export interface BenchOptions {
  /** 'sqlite' or mysql://…; @default 'sqlite' */
  backend?: string | Backend;
  /** time per measurement; @default 3 */
  seconds?: number;
}

export interface BenchResult {
  backend: string;
  /** reset() + close of an episode (create database, table, rows; drop) per second */
  setupsPerSec: number;
  /** step() with one SELECT through the full protocol per second */
  queryStepsPerSec: number;
  setups: number;
  querySteps: number;
}

const nowSec = (): number => Number(process.hrtime.bigint()) / 1e9;

/**
 * Measure episode set-up and query-step rates.
 *
 * @example
 * const b = await benchDbbench({ backend: 'sqlite', seconds: 2 });
 */
export async function benchDbbench(opts: BenchOptions = {}): Promise<BenchResult> {
  const seconds = opts.seconds ?? 3;
  if (!(seconds > 0)) throw new DbbenchError('DBBENCH_BAD_OPTION', `options.seconds must be positive, got ${String(opts.seconds)}`, { seconds });
  const backend = useBackend(opts.backend ?? 'sqlite');
  const tasks = loadTasks({ file: 'v0.2/standard' });
  let setups = 0;
  let t0 = nowSec();
  while (nowSec() - t0 < seconds) {
    const task = tasks[setups % tasks.length] as DbbenchTask;
    const r = await reset(task, { db: backend });
    await closeEpisode(r.state.episodeId);
    setups++;
  }
  const setupsPerSec = setups / (nowSec() - t0);

  let querySteps = 0;
  t0 = nowSec();
  let i = 0;
  while (nowSec() - t0 < seconds) {
    const task = tasks[i++ % tasks.length] as DbbenchTask;
    const col = task.columns[0] ?? '*';
    const sql = `SELECT * FROM \`${task.tableName}\` WHERE \`${col}\` = 'x' OR \`${col}\` LIKE '%a%' LIMIT 5`;
    let { state } = await reset(task, { db: backend, maxRounds: 1_000_000 });
    for (let k = 0; k < 50; k++) {
      const s = await step(state, `Action: Operation\n\`\`\`sql\n${sql}\n\`\`\``);
      state = s.state;
      querySteps++;
    }
    await closeEpisode(state.episodeId);
  }
  const queryStepsPerSec = querySteps / (nowSec() - t0);
  return { backend: backend.key, setupsPerSec, queryStepsPerSec, setups, querySteps };
}
