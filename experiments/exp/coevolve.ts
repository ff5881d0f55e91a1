/**
 * `hr1 exp coevolve`: a fine-tuned target (an lm/ zoo model's `-ft` variant; for a sim target a
 * stronger profile of the same family stands in) with
 * the method's patches written from the vanilla target's packets vs from the fine-tuned target's
 * own packets, both scored on the fine-tuned target (and the vanilla target's own, for reference).
 */
import { z } from 'zod';
import { parseTargetSpec } from '../../policies/targets/spec.ts';
import { knownZoo } from '../../policies/targets/lm/zoo.ts';
import { SIM_PROFILES } from '../../policies/targets/sim/profiles.ts';
import { bootstrapStrata, pairedDelta, type Interval } from '../report/bootstrap.ts';
import { fmtInterventions, interventionRate, taskSeedMatrix } from '../report/data.ts';
import { fmtDelta, fmtPct, mdTable, textTable } from '../report/markdown.ts';
import { barChart } from '../report/plots.ts';
import { ExpError } from '../runner/errors.ts';
import { envMetrics, primaryMetric, type EvalRow } from '../runner/evaluate.ts';
import type { RunMeta } from '../runner/run-dir.ts';
import { commonShape, methodsMeta, reportHeader, requireAvailable, requireTargetEnvs, resolveExp, runExperiment, simulatedOf, splitsMeta, targetSchema, type ExpIO, type ExpResult, type Report } from './common.ts';
import { planMethodOnTarget } from './sweep.ts';

export const DEFAULT_COEVOLVE_BASE = 'sim/qwen-3b';
/** @default 'prompted-editor' */
export const DEFAULT_COEVOLVE_METHOD = 'prompted-editor';

export const ExpCoevolveSchema = z.strictObject({
  ...commonShape,
  target: targetSchema.default(DEFAULT_COEVOLVE_BASE),
  /** the fine-tuned target. @default the next larger sim profile of the same family */
  tuned: targetSchema.optional(),
  method: z.string().default(DEFAULT_COEVOLVE_METHOD),
});
export type ExpCoevolveInput = z.input<typeof ExpCoevolveSchema>;
export type ExpCoevolveOptions = z.output<typeof ExpCoevolveSchema>;

export function resolveExpCoevolve(input: unknown): ExpCoevolveOptions {
  return resolveExp(ExpCoevolveSchema, input, 'coevolve');
}

/**
 * The fine-tuned version of a target: for `lm/<name>` the zoo's `<name>-ft` (the same model
 * trained further on fresh data; `@tiny` kept); for a sim target a stand-in, the next larger
 * profile of its family.
 */
export function tunedOf(target: string): string {
  const s = parseTargetSpec(target);
  if (s.kind === 'lm') {
    const tiny = s.name.endsWith('@tiny');
    const base = tiny ? s.name.slice(0, -5) : s.name;
    const ft = knownZoo().find((z) => z.base === base);
    if (!ft) throw new ExpError('EXP_CONFIG', `coevolve.tuned: the zoo has no fine-tuned variant of lm/${base} (those with one: ${knownZoo().filter((z) => z.base).map((z) => `lm/${z.base}`).join(', ')}); give tuned explicitly`, { path: 'coevolve.tuned' });
    return `lm/${ft.name}${tiny ? '@tiny' : ''}`;
  }
  const p = s.kind === 'sim' ? SIM_PROFILES.find((x) => x.name === s.profile) : undefined;
  const next = p ? SIM_PROFILES.filter((x) => x.family === p.family && x.sizeB > p.sizeB).sort((a, b) => a.sizeB - b.sizeB)[0] : undefined;
  if (!next) throw new ExpError('EXP_CONFIG', `coevolve.tuned: no larger sim profile of ${target}'s family to stand in for its fine-tuned version; give tuned explicitly`, { path: 'coevolve.tuned' });
  return `sim/${next.name}`;
}

/**
 * Run `hr1 exp coevolve`.
 *
 * @example
 * await runExpCoevolve({ target: 'sim/qwen-3b', tuned: 'sim/qwen-8b' });
 */
export async function runExpCoevolve(input: ExpCoevolveInput & { config?: string }, io: ExpIO = {}): Promise<ExpResult> {
  const o = resolveExpCoevolve(input);
  requireTargetEnvs(o.target, o.envs, 'target');
  const tuned = o.tuned ?? tunedOf(o.target);
  requireTargetEnvs(tuned, o.envs, 'tuned');
  const { methods, meta: mMeta } = methodsMeta([o.method], o, 'method');
  requireAvailable(mMeta[0]!, 'method');
  const m = methods[0]!;
  const targets = [o.target, tuned];
  return runExperiment(
    'coevolve',
    { ...o, tuned } as typeof o,
    { targets, simulated: simulatedOf(targets), methods: mMeta, splits: splitsMeta(o) },
    io,
    async (x) => {
      const plan: (() => Promise<unknown>)[] = [];
      for (const env of o.envs) {
        // the vanilla target with its own patches (the frozen-target row)
        planMethodOnTarget(x, o, 'coevolve', m, env, o.target, o.target, `from:${o.target}`, plan);
        // the fine-tuned target: patches from the vanilla target's packets, then from its own
        planMethodOnTarget(x, o, 'coevolve', m, env, tuned, o.target, `from:${o.target}`, plan);
        planMethodOnTarget(x, o, 'coevolve', m, env, tuned, tuned, `from:${tuned}`, plan, false);
      }
      x.progress.total(plan.length);
      for (const u of plan) await u();
    },
    reportCoevolve,
  );
}

export function reportCoevolve(meta: RunMeta, rows: EvalRow[]): Report {
  const b = meta.config.bootstrap as { resamples: number; seed: number; level: number };
  const envs = Object.keys(meta.splits);
  const [base, tuned] = meta.targets as [string, string];
  const m = meta.methods[0]!;
  const boot = (s: string) => ({ resamples: b.resamples, level: b.level, seed: `${b.seed}|${s}` });
  const arms = [
    { label: `${base} vanilla`, target: base, method: 'vanilla', variant: '' },
    { label: `${base} + patches from ${base}`, target: base, method: m.name, variant: `from:${base}` },
    { label: `${tuned} vanilla`, target: tuned, method: 'vanilla', variant: '' },
    { label: `${tuned} + patches from ${base} (not re-trained)`, target: tuned, method: m.name, variant: `from:${base}` },
    { label: `${tuned} + patches from ${tuned} (re-trained)`, target: tuned, method: m.name, variant: `from:${tuned}` },
  ];
  const mat = (a: (typeof arms)[number], env: string) => taskSeedMatrix(rows.filter((r) => r.env === env && r.target === a.target && r.method === a.method && (a.method === 'vanilla' || r.variant === a.variant)), primaryMetric(env));
  const vanillaOf = (t: string) => arms.find((a) => a.target === t && a.method === 'vanilla')!;
  const val: Interval[][] = [];
  const del: (Interval | null)[][] = [];
  const cols = [...envs, 'average'];
  arms.forEach((a, ai) => {
    const ms = envs.map((e) => mat(a, e));
    const vs = envs.map((e) => mat(vanillaOf(a.target), e));
    const ok = ms.every((x) => x) && vs.every((x) => x);
    val.push([...ms.map((x, i) => (x ? bootstrapStrata([x], boot(`${ai}|${envs[i]}`)) : { mean: NaN, lo: NaN, hi: NaN, n: 0 })), ok ? bootstrapStrata(ms as number[][][], boot(`${ai}|avg`)) : { mean: NaN, lo: NaN, hi: NaN, n: 0 }]);
    del.push(a.method === 'vanilla' ? cols.map(() => null) : [...ms.map((x, i) => (x && vs[i] ? pairedDelta([x], [vs[i]!], boot(`d${ai}|${envs[i]}`)) : null)), ok ? pairedDelta(ms as number[][][], vs as number[][][], boot(`d${ai}|avg`)) : null]);
  });
  const head = ['arm', ...cols.map((c) => (c === 'average' ? c : `${c} (${primaryMetric(c)})`))];
  const armRows = (a: (typeof arms)[number]) => rows.filter((r) => r.target === a.target && r.method === a.method && (a.method === 'vanilla' || r.variant === a.variant));
  const tRows = arms.map((a, i) => [a.label, ...val[i]!.map((v) => fmtPct(v)), fmtInterventions(interventionRate(armRows(a)))]);
  const dRows = arms.map((a, i) => [a.label, ...del[i]!.map((d) => (d ? fmtDelta(d) : '—'))]).filter((_, i) => arms[i]!.method !== 'vanilla');
  const md = [
    reportHeader(`exp coevolve: ${base} → ${tuned} (${m.label})`, meta),
    `**Protocol:** the "fine-tuned" target is ${tuned}, a stronger profile of ${base}'s family standing in for a fine-tuned model. Patches are written by ${m.label} from the packets of ${base} (as trained on the vanilla target) or of ${tuned} (re-trained on the fine-tuned target), and scored on test tasks × seeds, paired with the same target's vanilla.`,
    '',
    '## Results (%, 95% CI)',
    '',
    mdTable([...head, 'interventions'], tRows),
    '',
    'interventions: the share of executed actions the patches forced or rewritten instead of the model (mean over the arm\'s episodes).',
    '',
    '## Δ vs the same target\'s vanilla (points, paired)',
    '',
    mdTable(head, dRows),
    '',
    'Paper: frozen 9B target 44.3 → 53.6; fine-tuned target 59.2 → 64.2.',
    '',
    '![coevolve](plots/coevolve.svg)',
    '',
  ].join('\n');
  // the chart shows the envs' other metrics too (WebShop success beside its score)
  const extra = envs.flatMap((env) => envMetrics(env).slice(1).map((metric) => ({ env, metric })));
  const extraOf = (a: (typeof arms)[number], ai: number) =>
    extra.map(({ env, metric }) => {
      const x = taskSeedMatrix(rows.filter((r) => r.env === env && r.target === a.target && r.method === a.method && (a.method === 'vanilla' || r.variant === a.variant)), metric);
      return x ? bootstrapStrata([x], boot(`${ai}|${env}|${metric}`)) : null;
    });
  const svg = barChart({
    title: `exp coevolve: ${base} → ${tuned}${meta.simulated.length ? ' (SIMULATED)' : ''}`,
    subtitle: `${extra.length ? 'every metric per env, the average of the primary ones' : 'primary metric'}, 95% bootstrap CI`,
    categories: [...envs.map((e) => (extra.length ? `${e} ${primaryMetric(e)}` : e)), ...extra.map((c) => `${c.env} ${c.metric}`), 'average'],
    yName: '%',
    series: arms.map((a, i) => ({ name: a.label, values: [...val[i]!.slice(0, envs.length), ...extraOf(a, i), val[i]![envs.length]!] })),
    height: 480,
  });
  const text = [`exp coevolve — ${base} → ${tuned}${meta.simulated.length ? ` (SIMULATED: ${meta.simulated.join(', ')})` : ''}; %, 95% CI`, textTable([...head, 'interventions'], tRows)].join('\n');
  return { markdown: md, text, plots: [{ name: 'coevolve', svg }] };
}
