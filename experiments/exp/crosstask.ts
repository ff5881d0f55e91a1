/**
 * `hr1 exp crosstask`: 10 failures from training tasks → one patch → gain on all held-out tasks.
 * Per env and seed s: the train split in a seeded shuffle is rolled out vanilla (episode seed
 * CROSSTASK_SEED_BASE + s, apart from every engineer's and evaluation's) and its first 10 failed
 * episodes make the packet; each method writes one patch from it; the
 * patch is scored on every test task, paired with vanilla. Mean ± std of the gain over seeds.
 */
import { z } from 'zod';
import { Rng } from '../../cluster/rng.ts';
import { isInfraStatus } from '../../harness/index.ts';
import { extractPacket } from '../../policies/engineer/index.ts';
import { listTasks } from '../../envs/registry.ts';
import { meanStd, type Interval } from '../report/bootstrap.ts';
import { fmtDelta, fmtMeanStd, mdTable, textTable } from '../report/markdown.ts';
import { barChart } from '../report/plots.ts';
import { fmtInterventions, interventionRate } from '../report/data.ts';
import { primaryMetric, episodesOf, rolesOf, testTasks, type EvalRow, type ExpRun, type PacketSource } from '../runner/evaluate.ts';
import type { RunMeta } from '../runner/run-dir.ts';
import { SEED_SPACES, type EpisodeSet } from '../../drivers/index.ts';
import { checkSplits, commonShape, methodOptionsOf, methodsMeta, posInt, reportHeader, requireTargetEnvs, resolveExp, runExperiment, simulatedOf, splitsMeta, testSchema, unitKey, type ExpIO, type ExpResult, type Report, engineerTrainShape, targetPerEnvSchema, targetsByEnv, targetsLabel } from './common.ts';
import { gainOf } from './sweep.ts';

export const DEFAULT_CROSSTASK_TARGET = 'sim/qwen-3b';
/** The engineer (when registered) against the prompted editor. */
export const DEFAULT_CROSSTASK_METHODS = ['engineer-grpo', 'prompted-editor'];
/** Failures in the packet. @default 10 */
export const DEFAULT_FAILURES = 10;
/** Packet seeds (mean ± std over them). @default [0, 1, 2] */
export const DEFAULT_CROSSTASK_SEEDS = [0, 1, 2];
/** All held-out tasks, one episode seed. */
export const DEFAULT_CROSSTASK_TEST = { tasks: 'all' as const, seeds: [0] };

export const ExpCrosstaskSchema = z.strictObject({
  ...commonShape,
  /** the target, or one per env (`alfworld: lm/…`; `--target alfworld=lm/a,webshop=lm/b`) */
  target: targetPerEnvSchema.default(DEFAULT_CROSSTASK_TARGET),
  ...engineerTrainShape,
  methods: z.array(z.string()).min(1, 'name at least one method').default(DEFAULT_CROSSTASK_METHODS),
  failures: posInt.default(DEFAULT_FAILURES),
  seeds: z.array(z.number().int('must be an integer').nonnegative('must be ≥ 0')).min(1, 'give at least one seed').default(DEFAULT_CROSSTASK_SEEDS),
  test: testSchema(DEFAULT_CROSSTASK_TEST),
});
export type ExpCrosstaskInput = z.input<typeof ExpCrosstaskSchema>;
export type ExpCrosstaskOptions = z.output<typeof ExpCrosstaskSchema>;

export function resolveExpCrosstask(input: unknown): ExpCrosstaskOptions {
  return resolveExp(ExpCrosstaskSchema, input, 'crosstask');
}

/** Where the episode seeds of crosstask's failures start: packet seed s plays `CROSSTASK_SEED_BASE + s` (SEED_SPACES, drivers/splits.ts). */
export const CROSSTASK_SEED_BASE = SEED_SPACES.crosstask;

/** Every episode crosstask's failures may come from (the whole train split under each packet seed): checked apart from the engineers' and the tests'. */
export function crosstaskCandidates(env: string, trainSplit: string, seeds: readonly number[]): EpisodeSet {
  return { name: 'crosstask failures (candidates)', env, episodes: seeds.flatMap((s) => listTasks(env, trainSplit).map((taskId) => ({ taskId, seed: CROSSTASK_SEED_BASE + s }))) };
}

/** The first `n` failed vanilla episodes of the train split in a seeded shuffle (episode seed CROSSTASK_SEED_BASE + s). */
async function failuresSource(x: ExpRun, env: string, target: string, n: number, s: number, trainSplit: string): Promise<PacketSource> {
  const order = new Rng(`crosstask|${env}|${s}`).shuffle(listTasks(env, trainSplit));
  const picked: PacketSource = { packet: extractPacket([]), records: [], episodes: [] };
  // roll the shuffled split in slices until n failures are in hand
  for (let i = 0; i < order.length && picked.records.length < n; i += 40) {
    const eps = order.slice(i, i + 40).map((taskId) => ({ taskId, seed: CROSSTASK_SEED_BASE + s }));
    const recs = await x.roll(env, target, null, eps);
    for (const r of recs) {
      if (picked.records.length >= n) break;
      if (!r.outcome.won && !isInfraStatus(r.outcome.status)) {
        picked.records.push(r);
        picked.episodes.push({ taskId: r.taskId, seed: r.seed });
      }
    }
  }
  picked.packet = extractPacket(picked.records);
  return picked;
}

/**
 * Run `hr1 exp crosstask`.
 *
 * @example
 * await runExpCrosstask({ envs: ['alfworld'], methods: ['prompted-editor'] });
 */
export async function runExpCrosstask(input: ExpCrosstaskInput & { config?: string }, io: ExpIO = {}): Promise<ExpResult> {
  const o = resolveExpCrosstask(input);
  const byEnv = targetsByEnv(o.target, o.envs);
  for (const env of o.envs) requireTargetEnvs(byEnv[env]!, [env], typeof o.target === 'string' ? 'target' : `target.${env}`);
  const targets = [...new Set(Object.values(byEnv))];
  const { methods, meta: mMeta } = methodsMeta(o.methods, o);
  const mopts = methodOptionsOf(o);
  const splits = splitsMeta(o);
  return runExperiment(
    'crosstask',
    o,
    { targets, ...(typeof o.target === 'string' ? {} : { targetByEnv: byEnv }), simulated: simulatedOf(targets), methods: mMeta, splits, disjoint: checkSplits(o, mMeta.some((m) => m.kind === 'engineer' && m.available === true), (env) => crosstaskCandidates(env, rolesOf(env, o.splits?.[env]).train, o.seeds)) },
    io,
    async (x) => {
      const plan: (() => Promise<unknown>)[] = [];
      for (const env of o.envs) {
        const target = byEnv[env]!;
        const episodes = episodesOf(testTasks(env, o.test.tasks, o.seed, {}, o.splits?.[env]), o.test.seeds);
        const vkey = unitKey({ exp: 'crosstask', env, target: target, method: 'vanilla', packet: null, episodes });
        plan.push(() => x.evalUnit({ key: vkey, label: `${env} vanilla`, env, target: target, method: 'vanilla', packet: null, episodes, patch: async () => ({ patch: null, packetHash: null }) }));
        methods.forEach((m, mi) => {
          if (mMeta[mi]!.available !== true) return;
          for (const s of o.seeds) {
            const key = unitKey({ exp: 'crosstask', env, target: target, method: m.name, version: m.version ?? '', packet: s, episodes, failures: o.failures, editor: m.kind === 'editor' ? o.editor : null, engineer: m.kind === 'engineer' ? (o.engineer ?? null) : null });
            plan.push(() =>
              x.evalUnit({ key, label: `${env} ${m.name} seed ${s}`, env, target: target, method: m.name, packet: s, episodes, patch: async () => x.propose(m, { env, target: target, source: await failuresSource(x, env, target, o.failures, s, rolesOf(env, o.splits?.[env]).train), seed: s, options: mopts }) }),
            );
          }
        });
      }
      x.progress.total(plan.length);
      for (const u of plan) await u();
    },
    reportCrosstask,
  );
}

export function reportCrosstask(meta: RunMeta, rows: EvalRow[]): Report {
  const b = meta.config.bootstrap as { resamples: number; seed: number; level: number };
  const envs = Object.keys(meta.splits);
  const tOf = (env: string): string => meta.targetByEnv?.[env] ?? meta.targets[0]!;
  const target = targetsLabel(Object.fromEntries(envs.map((e) => [e, tOf(e)])));
  const simulated = envs.some((e) => meta.simulated.includes(tOf(e)));
  const seeds = meta.config.seeds as number[];
  const failures = meta.config.failures as number;
  const avail = meta.methods.filter((m) => m.available === true);
  // per method × env: the gain of each seed's patch, then mean ± std over seeds
  const per: Record<string, Record<string, (Interval | null)[]>> = {};
  for (const m of avail) {
    per[m.name] = {};
    for (const env of envs) {
      per[m.name]![env] = seeds.map((s) => {
        const sel = rows.filter((r) => r.env === env && r.method === m.name && r.packet === s);
        return gainOf([...sel, ...rows.filter((r) => r.env === env && r.method === 'vanilla')], env, tOf(env), m.name, '', { resamples: b.resamples, level: b.level, seed: `${b.seed}|${m.name}|${env}|${s}` });
      });
    }
  }
  const ms = (xs: (Interval | null)[]) => {
    const v = xs.filter((i): i is Interval => i !== null).map((i) => i.mean);
    return v.length ? meanStd(v) : null;
  };
  const head = ['method', ...envs.map((e) => `${e} Δ (${primaryMetric(e)})`), 'average', 'interventions'];
  const tRows = meta.methods.map((m) => {
    if (m.available !== true) return [m.label, m.available as string, ...envs.map(() => '—')];
    const envMs = envs.map((e) => ms(per[m.name]![e]!));
    // the average over envs, per seed, then mean ± std over seeds
    const avgPerSeed = seeds.map((_, si) => {
      const v = envs.map((e) => per[m.name]![e]![si]?.mean);
      return v.every((x) => x !== undefined && Number.isFinite(x)) ? (v as number[]).reduce((a, c) => a + c, 0) / v.length : NaN;
    });
    return [m.label, ...envMs.map((x) => fmtMeanStd(x)), fmtMeanStd(avgPerSeed.every(Number.isFinite) ? meanStd(avgPerSeed) : null), fmtInterventions(interventionRate(rows.filter((r) => r.method === m.name)))];
  });
  const seedRows = avail.flatMap((m) => envs.map((e) => [m.label, e, ...per[m.name]![e]!.map((i) => fmtDelta(i))]));
  const tasksN = envs.map((e) => `${e} ${meta.splits[e]!.testTasks}`).join(', ');
  const md = [
    reportHeader(`exp crosstask: ${failures} failures → one patch → all held-out tasks (${target})`, meta),
    `**Protocol:** per env and seed s ∈ {${seeds.join(', ')}}: the train split in a seeded shuffle is rolled out vanilla (episode seed s) until ${failures} failures are in hand; they make one packet; each method writes one patch from it; the patch is scored on all held-out tasks (${tasksN}), paired with vanilla. Gain = mean ± sample std over the seeds.`,
    '',
    '## Gain (points, mean ± std over seeds)',
    '',
    mdTable(head, tRows),
    '',
    '## Per seed (points, 95% CI over tasks)',
    '',
    mdTable(['method', 'env', ...seeds.map((s) => `seed ${s}`)], seedRows),
    '',
    'Paper: 10 failures → +8.9 points on 1,270 held-out tasks.',
    '',
    '![gain per env](plots/crosstask.svg)',
    '',
  ].join('\n');
  const svg = barChart({
    title: `exp crosstask: ${failures} failures → one patch (${target}${simulated ? ', SIMULATED' : ''})`,
    subtitle: 'gain in points; bar = mean over seeds, whisker = ± std',
    categories: envs,
    yName: 'points',
    series: avail.map((m) => ({ name: m.label, method: m.name, values: envs.map((e) => {
      const x = ms(per[m.name]![e]!);
      return x ? { mean: x.mean, lo: x.mean - x.std, hi: x.mean + x.std, n: x.n } : null;
    }) })),
  });
  const text = [`exp crosstask — ${target}${simulated ? ' (SIMULATED target)' : ''}; gain in points, mean ± std over seeds ${seeds.join(',')}`, textTable(head, tRows)].join('\n');
  return { markdown: md, text, plots: [{ name: 'crosstask', svg }] };
}
