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
import { checkSplits, commonShape, engineerTrainShape, methodsMeta, reportHeader, requireAvailable, requireTargetEnvs, resolveExp, runExperiment, simulatedOf, splitsMeta, targetPerEnvSchema, targetsByEnv, type ExpIO, type ExpResult, type Report } from './common.ts';
import { planMethodOnTarget } from './sweep.ts';

export const DEFAULT_COEVOLVE_BASE = 'sim/qwen-3b';
/** @default 'prompted-editor' */
export const DEFAULT_COEVOLVE_METHOD = 'prompted-editor';

export const ExpCoevolveSchema = z.strictObject({
  ...commonShape,
  ...engineerTrainShape,
  /** the vanilla target, or one per env (`alfworld: lm/…`; `--target alfworld=lm/a,webshop=lm/b`) */
  target: targetPerEnvSchema.default(DEFAULT_COEVOLVE_BASE),
  /** the fine-tuned target (one spec or a map like `target`). @default tunedOf(target): the zoo's variant trained further from it, or the next larger sim profile of the same family */
  tuned: targetPerEnvSchema.optional(),
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
  const pairs = coevolvePairs(o.target, o.tuned, o.envs);
  for (const env of o.envs) {
    requireTargetEnvs(pairs[env]!.base, [env], typeof o.target === 'string' ? 'target' : `target.${env}`);
    requireTargetEnvs(pairs[env]!.tuned, [env], o.tuned === undefined || typeof o.tuned === 'string' ? 'tuned' : `tuned.${env}`);
  }
  const { methods, meta: mMeta } = methodsMeta([o.method], o, 'method');
  requireAvailable(mMeta[0]!, 'method');
  const m = methods[0]!;
  const targets = [...new Set(o.envs.flatMap((e) => [pairs[e]!.base, pairs[e]!.tuned]))];
  // the resolved fine-tuned targets are part of the run's config (one spec when every env shares it)
  const tunedSpecs = [...new Set(o.envs.map((e) => pairs[e]!.tuned))];
  const tuned = tunedSpecs.length === 1 ? tunedSpecs[0]! : Object.fromEntries(o.envs.map((e) => [e, pairs[e]!.tuned]));
  return runExperiment(
    'coevolve',
    { ...o, tuned } as typeof o,
    { targets, simulated: simulatedOf(targets), methods: mMeta, splits: splitsMeta(o), disjoint: checkSplits(o, mMeta.some((x) => x.kind === 'engineer' && x.available === true)) },
    io,
    async (x) => {
      const plan: (() => Promise<unknown>)[] = [];
      for (const env of o.envs) {
        const { base, tuned: ft } = pairs[env]!;
        // the vanilla target with its own patches (the frozen-target row)
        planMethodOnTarget(x, o, 'coevolve', m, env, base, base, `from:${base}`, plan);
        // the fine-tuned target: patches from the vanilla target's packets, then from its own
        planMethodOnTarget(x, o, 'coevolve', m, env, ft, base, `from:${base}`, plan);
        planMethodOnTarget(x, o, 'coevolve', m, env, ft, ft, `from:${ft}`, plan, false);
      }
      x.progress.total(plan.length);
      for (const u of plan) await u();
    },
    reportCoevolve,
  );
}

/** Per env: the vanilla target and its fine-tuned version (given, or `tunedOf` the env's target). */
export function coevolvePairs(target: string | Record<string, string>, tuned: string | Record<string, string> | undefined, envs: readonly string[]): Record<string, { base: string; tuned: string }> {
  const base = targetsByEnv(target, envs, 'target');
  const ft = tuned === undefined ? null : targetsByEnv(tuned, envs, 'tuned');
  return Object.fromEntries(envs.map((e) => [e, { base: base[e]!, tuned: ft ? ft[e]! : tunedOf(base[e]!) }]));
}

export function reportCoevolve(meta: RunMeta, rows: EvalRow[]): Report {
  const b = meta.config.bootstrap as { resamples: number; seed: number; level: number };
  const envs = Object.keys(meta.splits);
  const pairs = coevolvePairs(meta.config.target as string | Record<string, string>, meta.config.tuned as string | Record<string, string>, envs);
  const m = meta.methods[0]!;
  const boot = (s: string) => ({ resamples: b.resamples, level: b.level, seed: `${b.seed}|${s}` });
  // one pair for every env: arms named by the targets; else by role, with the pairs listed
  const shared = new Set(envs.map((e) => `${pairs[e]!.base} ${pairs[e]!.tuned}`)).size === 1;
  const [base, tuned] = shared ? [pairs[envs[0]!]!.base, pairs[envs[0]!]!.tuned] : ['vanilla target', 'fine-tuned target'];
  type Role = 'base' | 'tuned';
  const arms: { label: string; role: Role; method: string; from: Role | null }[] = [
    { label: `${base}, no patch`, role: 'base', method: 'vanilla', from: null },
    { label: `${base} + patches from ${base}`, role: 'base', method: m.name, from: 'base' },
    { label: `${tuned}, no patch`, role: 'tuned', method: 'vanilla', from: null },
    { label: `${tuned} + patches from ${base} (not re-trained)`, role: 'tuned', method: m.name, from: 'base' },
    { label: `${tuned} + patches from ${tuned} (re-trained)`, role: 'tuned', method: m.name, from: 'tuned' },
  ];
  const armRowsIn = (a: (typeof arms)[number], env: string) => {
    const t = pairs[env]![a.role];
    const variant = a.from ? `from:${pairs[env]![a.from]}` : '';
    return rows.filter((r) => r.env === env && r.target === t && r.method === a.method && (a.method === 'vanilla' || r.variant === variant));
  };
  const mat = (a: (typeof arms)[number], env: string) => taskSeedMatrix(armRowsIn(a, env), primaryMetric(env));
  const vanillaOf = (a: (typeof arms)[number]) => arms.find((x) => x.role === a.role && x.method === 'vanilla')!;
  const val: Interval[][] = [];
  const del: (Interval | null)[][] = [];
  const cols = [...envs, 'average'];
  arms.forEach((a, ai) => {
    const ms = envs.map((e) => mat(a, e));
    const vs = envs.map((e) => mat(vanillaOf(a), e));
    const ok = ms.every((x) => x) && vs.every((x) => x);
    val.push([...ms.map((x, i) => (x ? bootstrapStrata([x], boot(`${ai}|${envs[i]}`)) : { mean: NaN, lo: NaN, hi: NaN, n: 0 })), ok ? bootstrapStrata(ms as number[][][], boot(`${ai}|avg`)) : { mean: NaN, lo: NaN, hi: NaN, n: 0 }]);
    del.push(a.method === 'vanilla' ? cols.map(() => null) : [...ms.map((x, i) => (x && vs[i] ? pairedDelta([x], [vs[i]!], boot(`d${ai}|${envs[i]}`)) : null)), ok ? pairedDelta(ms as number[][][], vs as number[][][], boot(`d${ai}|avg`)) : null]);
  });
  const armRows = (a: (typeof arms)[number]) => envs.flatMap((e) => armRowsIn(a, e));
  const lmTuned = envs.every((e) => parseTargetSpec(pairs[e]!.tuned).kind === 'lm');
  const pairText = envs.map((e) => `${e}: ${pairs[e]!.base} → ${pairs[e]!.tuned}`).join('; ');
  const protocol = lmTuned
    ? `**Protocol:** each env's fine-tuned target is its vanilla target trained further (the zoo's \`-ft\` / DAgger \`-da\` variant: ${pairText}).`
    : `**Protocol:** the "fine-tuned" target stands in for a fine-tuned model (${pairText}; for a sim target, a stronger profile of its family).`;
  const head = ['arm', ...cols.map((c) => (c === 'average' ? c : `${c} (${primaryMetric(c)})`))];
  const tRows = arms.map((a, i) => [a.label, ...val[i]!.map((v) => fmtPct(v)), fmtInterventions(interventionRate(armRows(a)))]);
  const dRows = arms.map((a, i) => [a.label, ...del[i]!.map((d) => (d ? fmtDelta(d) : '—'))]).filter((_, i) => arms[i]!.method !== 'vanilla');
  const md = [
    reportHeader(`exp coevolve: ${shared ? `${base} → ${tuned}` : pairText} (${m.label})`, meta),
    `${protocol} Patches are written by ${m.label} from the packets of the vanilla target (as the harness was learned there) or of the fine-tuned target (re-written on it), and scored on test tasks × seeds, paired with the same target's vanilla.`,
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
      const x = taskSeedMatrix(armRowsIn(a, env), metric);
      return x ? bootstrapStrata([x], boot(`${ai}|${env}|${metric}`)) : null;
    });
  const svg = barChart({
    title: `exp coevolve: ${shared ? `${base} → ${tuned}` : 'per env'}${meta.simulated.length ? ' (SIMULATED)' : ''}`,
    subtitle: `${extra.length ? 'every metric per env, the average of the primary ones' : 'primary metric'}, 95% bootstrap CI`,
    categories: [...envs.map((e) => (extra.length ? `${e} ${primaryMetric(e)}` : e)), ...extra.map((c) => `${c.env} ${c.metric}`), 'average'],
    yName: '%',
    series: arms.map((a, i) => ({ name: a.label, values: [...val[i]!.slice(0, envs.length), ...extraOf(a, i), val[i]![envs.length]!] })),
    height: 480,
  });
  const text = [`exp coevolve — ${shared ? `${base} → ${tuned}` : pairText}${meta.simulated.length ? ` (SIMULATED: ${meta.simulated.join(', ')})` : ''}; %, 95% CI`, textTable([...head, 'interventions'], tRows)].join('\n');
  return { markdown: md, text, plots: [{ name: 'coevolve', svg }] };
}
