/**
 * `hr1 exp sweep --targets …`: one method applied without retuning to many targets. Each target
 * supplies its own failure packets (its vanilla rollout of the train batches) and gets its own
 * patches; the gain is Δ vs that target's vanilla on the env's test episodes (paired).
 */
import { z } from 'zod';
import { ZOO } from '../../policies/targets/lm/zoo.ts';
import { SIM_PROFILES } from '../../policies/targets/sim/profiles.ts';
import { bootstrapMean, pairedDelta, type Interval } from '../report/bootstrap.ts';
import { fmtInterventions, interventionRate, taskSeedMatrix } from '../report/data.ts';
import { fmtDelta, mdTable, textTable } from '../report/markdown.ts';
import { heatmap } from '../report/plots.ts';
import { envMetrics, primaryMetric, episodesOf, testTasks, trainBatches, type EvalRow } from '../runner/evaluate.ts';
import type { Method } from '../runner/methods.ts';
import type { RunMeta } from '../runner/run-dir.ts';
import { commonShape, engineerTrainShape, methodOptionsOf, methodsMeta, reportHeader, requireAvailable, resolveExp, runExperiment, simulatedOf, checkSplits, splitsMeta, targetEnvs, targetSchema, testSchema, trainSchema, unitKey, type CommonOptions, type ExpIO, type ExpResult, type Report } from './common.ts';
import type { ExpRun } from '../runner/evaluate.ts';

/** Every SIMULATED profile. */
export const DEFAULT_SWEEP_TARGETS = SIM_PROFILES.map((p) => `sim/${p.name}`);
/** Every lm/ zoo model that is not a fine-tuned variant (`--targets zoo`). */
export const ZOO_SWEEP_TARGETS = ZOO.filter((z) => !z.base).map((z) => `lm/${z.name}`);
/** @default 'prompted-editor' (the engineer once it is registered: `--method engineer-grpo`) */
export const DEFAULT_SWEEP_METHOD = 'prompted-editor';
/** A smaller test set per cell than main: 40 tasks × 2 seeds, 2 packets. */
export const DEFAULT_SWEEP_TEST = { tasks: 40, seeds: [0, 1] };
export const DEFAULT_SWEEP_TRAIN = { packets: 2, batchSize: 16 };

export const ExpSweepSchema = z.strictObject({
  ...commonShape,
  ...engineerTrainShape,
  /** target specs; `zoo` stands for every lm/ zoo model (not the -ft variants), `sims` for every sim profile */
  targets: z
    .array(z.union([z.literal('zoo'), z.literal('sims'), targetSchema]))
    .min(1, 'name at least one target')
    .default(DEFAULT_SWEEP_TARGETS)
    .transform((ts) => [...new Set(ts.flatMap((t) => (t === 'zoo' ? ZOO_SWEEP_TARGETS : t === 'sims' ? DEFAULT_SWEEP_TARGETS : [t])))]),
  method: z.string().default(DEFAULT_SWEEP_METHOD),
  test: testSchema(DEFAULT_SWEEP_TEST),
  train: trainSchema(DEFAULT_SWEEP_TRAIN),
});
export type ExpSweepInput = z.input<typeof ExpSweepSchema>;
export type ExpSweepOptions = z.output<typeof ExpSweepSchema>;

export function resolveExpSweep(input: unknown): ExpSweepOptions {
  return resolveExp(ExpSweepSchema, input, 'sweep');
}

/** Queue the units that score `m` on one target and env: vanilla, then one unit per packet. */
export function planMethodOnTarget(x: ExpRun, o: CommonOptions, exp: string, m: Method, env: string, evalTarget: string, sourceTarget: string, variant: string, plan: (() => Promise<unknown>)[], withVanilla = true): void {
  const episodes = episodesOf(testTasks(env, o.test.tasks, o.seed, {}, o.splits?.[env]), o.test.seeds);
  const batches = trainBatches(env, { packets: o.train.packets, batchSize: o.train.batchSize, seed: o.seed, roles: o.splits?.[env] });
  const mopts = methodOptionsOf(o);
  if (withVanilla) {
    const key = unitKey({ exp, env, target: evalTarget, method: 'vanilla', packet: null, episodes });
    plan.push(() => x.evalUnit({ key, label: `${env} ${evalTarget} vanilla`, env, target: evalTarget, method: 'vanilla', packet: null, episodes, patch: async () => ({ patch: null, packetHash: null }) }));
  }
  const packets = m.fixed ? [null] : batches.map((_, i) => i);
  for (const p of packets) {
    const batch = p === null ? null : batches[p]!;
    const seed = o.seed * 1000 + (p ?? 0);
    const key = unitKey({ exp, env, target: evalTarget, source: sourceTarget, method: m.name, version: m.version ?? '', packet: p, variant, episodes, batch, seed, editor: m.kind === 'editor' ? o.editor : null, engineer: m.kind === 'engineer' ? (o.engineer ?? null) : null });
    plan.push(() =>
      x.evalUnit({
        key,
        label: `${env} ${evalTarget} ${m.name}${variant ? ` ${variant}` : ''}${p === null ? '' : ` packet ${p + 1}/${batches.length}`}`,
        env,
        target: evalTarget,
        method: m.name,
        packet: p,
        variant,
        episodes,
        patch: async () => x.propose(m, { env, target: sourceTarget, source: batch ? await x.packet(env, sourceTarget, batch) : null, seed, options: mopts }),
      }),
    );
  }
}

/**
 * Run `hr1 exp sweep`.
 *
 * @example
 * await runExpSweep({ targets: ['sim/qwen-3b', 'openai:http://127.0.0.1:8000/v1#qwen'], envs: ['alfworld'] });
 */
export async function runExpSweep(input: ExpSweepInput & { config?: string }, io: ExpIO = {}): Promise<ExpResult> {
  const o = resolveExpSweep(input);
  const { methods, meta: mMeta } = methodsMeta([o.method], o, 'method');
  requireAvailable(mMeta[0]!, 'method');
  const m = methods[0]!;
  return runExperiment(
    'sweep',
    o,
    { targets: o.targets, simulated: simulatedOf(o.targets), methods: mMeta, splits: splitsMeta(o), disjoint: checkSplits(o, mMeta.some((m) => m.kind === 'engineer' && m.available === true)) },
    io,
    async (x) => {
      const plan: (() => Promise<unknown>)[] = [];
      // an lm/ target only plays the envs it was trained on; its other cells stay empty
      for (const t of o.targets) for (const env of o.envs) if (targetEnvs(t)?.includes(env) ?? true) planMethodOnTarget(x, o, 'sweep', m, env, t, t, '', plan);
      x.progress.total(plan.length);
      for (const u of plan) await u();
    },
    reportSweep,
  );
}

/** Gain of `method` over vanilla on one target and env (primary metric), paired. */
export function gainOf(rows: readonly EvalRow[], env: string, target: string, method: string, variant: string, boot: { resamples: number; level: number; seed: string }, baseTarget = target): Interval | null {
  const metric = primaryMetric(env);
  const a = taskSeedMatrix(rows.filter((r) => r.env === env && r.target === target && r.method === method && r.variant === variant), metric);
  const v = taskSeedMatrix(rows.filter((r) => r.env === env && r.target === baseTarget && r.method === 'vanilla'), metric);
  return a && v ? pairedDelta([a], [v], boot) : null;
}

/** Whether the run's engineer for `env` was trained on `target` (one of its training targets: its splits.json). */
export function engineerTrainedOn(meta: Pick<RunMeta, 'disjoint'>, target: string, env: string): boolean {
  const e = meta.disjoint?.engineers[env];
  return !!e && (e.targets ?? [e.target]).includes(target);
}

export function reportSweep(meta: RunMeta, rows: EvalRow[]): Report {
  const b = meta.config.bootstrap as { resamples: number; seed: number; level: number };
  const envs = Object.keys(meta.splits);
  const method = meta.methods[0]!;
  const cells = meta.targets.map((t) => envs.map((env) => gainOf(rows, env, t, method.name, '', { resamples: b.resamples, level: b.level, seed: `${b.seed}|${t}|${env}` })));
  // a target an engineer was trained on (in that env) is no unseen target: shown, marked, left out of the summary
  const trainedOn = (t: string, env: string): boolean => engineerTrainedOn(meta, t, env);
  const seen = meta.targets.filter((t) => envs.some((env) => trainedOn(t, env)));
  const flat = cells.flatMap((r, i) => r.filter((c, j) => !trainedOn(meta.targets[i]!, envs[j]!) && c !== null)) as Interval[];
  const positive = flat.filter((c) => c.mean > 0).length;
  const significant = flat.filter((c) => c.lo > 0).length;
  const negative = flat.filter((c) => c.mean < 0).length;
  const label = (t: string) => `${t}${meta.simulated.includes(t) ? ' (SIM)' : ''}${seen.includes(t) ? ' (trained on)' : ''}`;
  const head = ['target', ...envs.map((e) => `${e} Δ (${primaryMetric(e)})`), 'interventions'];
  const tRows = meta.targets.map((t, i) => [label(t), ...cells[i]!.map((c) => fmtDelta(c)), fmtInterventions(interventionRate(rows.filter((r) => r.target === t && r.method === method.name)))]);
  // the mean over cells of each cell's gain, with a bootstrap interval over cells (how much a new target gains on average)
  const mean = flat.length ? bootstrapMean(flat.map((c) => c.mean), { resamples: b.resamples, level: b.level, seed: `${b.seed}|sweep-mean` }) : null;
  const summary = `positive cells: ${positive} of ${flat.length} (CI above 0: ${significant}; negative: ${negative})${mean ? `; mean gain ${fmtDelta(mean)} points` : ''}${seen.length ? `; not counted: ${seen.length} target${seen.length === 1 ? '' : 's'} the engineer was trained on` : ''}`;
  const md = [
    reportHeader(`exp sweep: ${method.label} on ${meta.targets.length} targets`, meta),
    `**Protocol:** the same method (${method.label}), not retuned, on every target: each target's packets come from its own vanilla rollout of the train batches (${(meta.config.train as { packets: number }).packets} packets of ${(meta.config.train as { batchSize: number }).batchSize} tasks per env); its patches are scored on that target's test episodes, paired with its vanilla. (SIM) marks SIMULATED targets.${seen.length ? ` (trained on) marks a target the engineer was trained on (its packets of other tasks were in its training): shown, not counted in the summary.` : ''}`,
    '',
    '## Gain per target × env (points, 95% CI)',
    '',
    mdTable(head, tRows),
    '',
    'interventions: the share of executed actions the patches forced or rewritten instead of the model (mean over the target\'s episodes).',
    '',
    `**${summary}.** The paper reports all 20 unseen targets improved.`,
    '',
    '![gain heatmap](plots/sweep-heatmap.svg)',
    '',
  ].join('\n');
  // the envs' other metrics too (WebShop success beside its score)
  const extra = envs.flatMap((env) => envMetrics(env).slice(1).map((metric) => ({ env, metric })));
  const extraCells = meta.targets.map((t) =>
    extra.map(({ env, metric }) => {
      const a = taskSeedMatrix(rows.filter((r) => r.env === env && r.target === t && r.method === method.name && r.variant === ''), metric);
      const v = taskSeedMatrix(rows.filter((r) => r.env === env && r.target === t && r.method === 'vanilla'), metric);
      return a && v ? pairedDelta([a], [v], { resamples: b.resamples, level: b.level, seed: `${b.seed}|${t}|${env}|${metric}` }) : null;
    }),
  );
  const named = meta.targets.length <= 3 ? meta.targets.join(', ') : `${meta.targets.length} targets (${meta.targets.slice(0, 2).join(', ')}, …)`;
  const svg = heatmap({
    title: `exp sweep: gain of ${method.label} on ${named} (points)`,
    subtitle: `${summary}${meta.simulated.length ? '; SIMULATED targets marked (SIM)' : ''}`,
    x: [...envs.map((e) => (extra.length ? `${e} ${primaryMetric(e)}` : e)), ...extra.map((c) => `${c.env} ${c.metric}`)],
    y: meta.targets.map(label),
    values: cells.map((r, i) => [...r, ...extraCells[i]!].map((c) => (c ? c.mean : null))),
  });
  const text = [`exp sweep — ${method.label}; Δ vs vanilla in points, 95% CI; (SIM) = SIMULATED target`, textTable(head, tRows), summary].join('\n');
  return { markdown: md, text, plots: [{ name: 'sweep-heatmap', svg }] };
}
