/**
 * The held-out synthetic probe of a DBBench target: the model plays fresh synthetic tasks of the
 * kind it was trained on (synth.ts, drawn with a seed no build draws from, every table renamed so
 * its name, headers and string values are new), through `runEpisode` and the real env.
 *
 * It tells two failures apart that the dev split alone cannot: a model that did not learn the
 * skill at all (low here too: it memorised its training episodes) and one that learned it on its
 * own distribution but does not carry it to the real requests (high here, low on dev).
 */
import { Rng } from '../../../../cluster/rng.ts';
import { dbbenchEnv, type DbbenchTask } from '../../../../envs/dbbench/index.ts';
import { runEpisode, type EpisodeRecord, type Model } from '../../../../harness/index.ts';
import { bootstrapCI } from '../../../scorer/metrics.ts';
import { LmTargetError } from '../errors.ts';
import { synthTasks, type SynthPhrasing } from './synth.ts';

/**
 * The probe's task seed. Builds draw `lm-dbsynth:<seed>` (teacher episodes) and
 * `lm-dbsynth-student:<seed>` (DAgger episodes), never this one.
 */
export const PROBE_SEED = 'lm-dbsynth-probe';

/** @default tasks of the probe */
export const DEFAULT_PROBE_TASKS = 120;

export interface ProbeOptions {
  /** synthetic tasks. @default DEFAULT_PROBE_TASKS */
  tasks?: number;
  /** the share of renamed tables (synth.ts `rename`). @default 1: every table's names and values are new */
  rename?: number;
  /** request templates (the model's own training phrasing). @default 'base' */
  phrasing?: SynthPhrasing;
  /** after each episode (progress) */
  onEpisode?: () => void;
  /** episodes in flight (a batching model decodes their decisions together). @default 64 */
  inFlight?: number;
}

export interface ProbeResult {
  tasks: number;
  won: number;
  success: number;
  /** 95 % percentile bootstrap interval of `success` over tasks */
  successCi: [number, number];
  /** reads (SELECT tasks) and writes (INSERT, UPDATE, DELETE) */
  reads: { tasks: number; won: number };
  writes: { tasks: number; won: number };
  /** per task type (`other`, `counting`, …, `INSERT`) */
  byType: Record<string, { tasks: number; won: number }>;
  /** share of steps whose reply did not parse as an action */
  invalid: number;
}

const WRITES = new Set(['INSERT', 'UPDATE', 'DELETE']);

/** The probe's tasks: deterministic for the options (the same tasks for every model). */
export async function probeTasks(o: Pick<ProbeOptions, 'tasks' | 'rename' | 'phrasing'> = {}): Promise<DbbenchTask[]> {
  const n = o.tasks ?? DEFAULT_PROBE_TASKS;
  if (!Number.isInteger(n) || n < 1) throw new LmTargetError('LM_BAD_OPTION', `probe: tasks must be an integer ≥ 1, got ${String(n)}`, { data: { tasks: n } });
  return synthTasks(new Rng(`${PROBE_SEED}:${o.phrasing ?? 'base'}`), n, { rename: o.rename ?? 1, phrasing: o.phrasing ?? 'base' });
}

/**
 * Play `model` (or one model per task, e.g. the teacher) on the probe's tasks (task k with
 * episode seed k + 1) and count wins.
 */
export async function probeSynthetic(model: Model | ((task: DbbenchTask) => Model), o: ProbeOptions = {}): Promise<ProbeResult> {
  const tasks = await probeTasks(o);
  const recs = new Array<EpisodeRecord>(tasks.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(o.inFlight ?? 64, tasks.length) }, async () => {
      for (let i = next++; i < tasks.length; i = next++) {
        const t = tasks[i]!;
        recs[i] = await runEpisode(dbbenchEnv(t), { model: typeof model === 'function' ? model(t) : model, seed: i + 1 });
        o.onEpisode?.();
      }
    }),
  );
  const byType: ProbeResult['byType'] = {};
  const reads = { tasks: 0, won: 0 };
  const writes = { tasks: 0, won: 0 };
  let steps = 0;
  let invalid = 0;
  recs.forEach((r, i) => {
    const type = String(tasks[i]!.type);
    const won = r.outcome.won ? 1 : 0;
    const b = (byType[type] ??= { tasks: 0, won: 0 });
    b.tasks++;
    b.won += won;
    const rw = WRITES.has(type) ? writes : reads;
    rw.tasks++;
    rw.won += won;
    steps += r.steps.length;
    invalid += r.steps.filter((s) => s.invalidFormat).length;
  });
  const wins = recs.map((r) => (r.outcome.won ? 1 : 0));
  const won = wins.reduce<number>((a, b) => a + b, 0);
  return {
    tasks: tasks.length,
    won,
    success: won / tasks.length,
    successCi: bootstrapCI(wins, { seed: `${PROBE_SEED}:ci` }),
    reads,
    writes,
    byType,
    invalid: invalid / Math.max(1, steps),
  };
}
