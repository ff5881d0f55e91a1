/**
 * `hr1 exp main`: per env and on average, vanilla, ReAct, Self-Refine, the prompted editor and
 * the engineer methods. Per env: packets from the vanilla rollout of train batches; each method
 * proposes a patch from each packet (fixed baselines once); every patch is scored on the env's
 * held-out test tasks × seeds, paired with vanilla on the same episodes.
 */
import { z } from 'zod';
import { envDescriptor, inReportOrder } from '../../envs/registry.ts';
import { TASK_TYPES } from '../../envs/alfworld/index.ts';
import { bootstrapStrata, meanStd, pairedDelta, type Interval } from '../report/bootstrap.ts';
import { fmtInterventions, hintTokensPerDecision, interventionRate, rowMean, taskSeedMatrix, validPatchRate, type Metric } from '../report/data.ts';
import { fmtDelta, fmtPct, mdTable, textTable } from '../report/markdown.ts';
import { barChart, stripChart } from '../report/plots.ts';
import { envMetrics, episodesOf, testTasks, trainBatches, type EvalRow } from '../runner/evaluate.ts';
import type { RunMeta } from '../runner/run-dir.ts';
import { commonShape, engineerTrainShape, methodOptionsOf, methodsMeta, reportHeader, requireTargetEnvs, resolveExp, runExperiment, simulatedOf, checkSplits, splitsMeta, targetPerEnvSchema, targetsByEnv, targetsLabel, unitKey, type ExpIO, type ExpResult, type Report } from './common.ts';

/** The frozen target of the main table (one spec, or one per env). @default 'sim/qwen-3b' (SIMULATED) */
export const DEFAULT_MAIN_TARGET = 'sim/qwen-3b';
/** Rows of the main table, in order. */
export const DEFAULT_MAIN_METHODS = ['vanilla', 'react', 'self-refine', 'prompted-editor', 'best-fixed-patch', 'engineer-sft', 'engineer-grpo'];

export const ExpMainSchema = z.strictObject({
  ...commonShape,
  target: targetPerEnvSchema.default(DEFAULT_MAIN_TARGET),
  methods: z.array(z.string()).min(1, 'name at least one method').default(DEFAULT_MAIN_METHODS),
  /**
   * the `hr1 train` config the engineers are trained with when no `engineer` is given (its env,
   * target and seed are the experiment's). @default experiments/configs/train.default.yaml
   */
  engineerConfig: engineerTrainShape.engineerConfig,
  /**
   * the targets the engineers are trained on when no `engineer` is given (a spec, or a map of env to
   * spec; a spec may join several with `+`, lm/a+lm/b: docs/ENGINEER.md, "Several targets per env").
   * @default the experiment's `target`
   */
  engineerTargets: engineerTrainShape.engineerTargets,
});

/** Options of `hr1 exp main` (input: every field optional; see the DEFAULT_* constants). */
export type ExpMainInput = z.input<typeof ExpMainSchema>;
export type ExpMainOptions = z.output<typeof ExpMainSchema>;

export function resolveExpMain(input: unknown): ExpMainOptions {
  return resolveExp(ExpMainSchema, input, 'main');
}

/**
 * The target of each env of resolved options (each checked to be trained on its env) and the
 * distinct targets. ExpError when a map lacks an env or a target was not trained on its env.
 */
export function mainTargets(o: Pick<ExpMainOptions, 'target' | 'envs'>): { byEnv: Record<string, string>; targets: string[] } {
  const byEnv = targetsByEnv(o.target, o.envs);
  for (const env of o.envs) requireTargetEnvs(byEnv[env]!, [env], typeof o.target === 'string' ? 'target' : `target.${env}`);
  return { byEnv, targets: [...new Set(Object.values(byEnv))] };
}

/** The paper's reference (frozen 9B target, average success). */
export const PAPER_MAIN = {
  ordering: 'Harness-R1 > prompted editors > vanilla > Self-Refine',
  numbers: 'vanilla 44.3, Harness-R1 (SFT+GRPO) 53.6, prompted frontier editor 48.8, Self-Refine 41.8 (average success, frozen 9B target)',
};

/**
 * Run `hr1 exp main`.
 *
 * @example
 * await runExpMain({ config: 'experiments/configs/main.default.yaml' });
 * await runExpMain({ envs: ['alfworld'], test: { tasks: 20, seeds: [0] }, train: { packets: 1 } }, { cluster });
 */
export async function runExpMain(input: ExpMainInput & { config?: string }, io: ExpIO = {}): Promise<ExpResult> {
  const o = resolveExpMain(input);
  const { byEnv: tOf, targets } = mainTargets(o);
  const { methods, meta: mMeta } = methodsMeta(o.methods, o);
  const mopts = methodOptionsOf(o);
  return runExperiment(
    'main',
    o,
    { targets, ...(typeof o.target === 'string' ? {} : { targetByEnv: tOf }), simulated: simulatedOf(targets), methods: mMeta, splits: splitsMeta(o), disjoint: checkSplits(o, mMeta.some((m) => m.kind === 'engineer' && m.available === true)) },
    io,
    async (x) => {
      const plan: (() => Promise<unknown>)[] = [];
      for (const env of o.envs) {
        const target = tOf[env]!;
        const episodes = episodesOf(testTasks(env, o.test.tasks, o.seed, {}, o.splits?.[env]), o.test.seeds);
        const batches = trainBatches(env, { packets: o.train.packets, batchSize: o.train.batchSize, seed: o.seed, roles: o.splits?.[env] });
        methods.forEach((m, mi) => {
          if (mMeta[mi]!.available !== true) return;
          const packets = m.fixed ? [null] : batches.map((_, i) => i);
          for (const p of packets) {
            const batch = p === null ? null : batches[p]!;
            const seed = o.seed * 1000 + (p ?? 0);
            const key = unitKey({ exp: 'main', env, target, method: m.name, version: m.version ?? '', packet: p, episodes, batch, seed, editor: m.kind === 'editor' ? o.editor : null, engineer: m.kind === 'engineer' ? (o.engineer ?? null) : null });
            plan.push(() =>
              x.evalUnit({
                key,
                label: `${env} ${m.name}${p === null ? '' : ` packet ${p + 1}/${batches.length}`}`,
                env,
                target,
                method: m.name,
                packet: p,
                episodes,
                patch: async () => x.propose(m, { env, target, source: batch ? await x.packet(env, target, batch) : null, seed, options: mopts }),
              }),
            );
          }
        });
      }
      x.progress.total(plan.length);
      for (const u of plan) await u();
    },
    reportMain,
  );
}

/** The ALFWorld task family of a task id (`valid_seen/pick_and_place_simple-Pencil-…/trial_…`); 'other' when none matches. */
export function alfworldTaskType(taskId: string): string {
  return TASK_TYPES.find((t) => taskId.includes(`${t}-`)) ?? 'other';
}

/** Intervention rates per task (sorted) and seed (sorted), averaged over the rows; null when no episode recorded one. */
function interventionMatrix(rows: readonly EvalRow[]): number[][] | null {
  const acc = new Map<string, Map<number, { s: number; n: number }>>();
  for (const r of rows) {
    for (const [t, seed, , , iv] of r.outcomes) {
      if (iv === undefined) continue;
      let m = acc.get(t);
      if (!m) acc.set(t, (m = new Map()));
      const c = m.get(seed) ?? { s: 0, n: 0 };
      c.s += iv;
      c.n++;
      m.set(seed, c);
    }
  }
  if (acc.size === 0) return null;
  return [...acc.keys()].sort().map((t) => {
    const m = acc.get(t)!;
    return [...m.keys()].sort((a, b) => a - b).map((s) => m.get(s)!.s / m.get(s)!.n);
  });
}

/** Columns of the main table: each env's metrics, in a fixed env order. */
function columns(envs: readonly string[]): { env: string; metric: Metric; title: string }[] {
  return inReportOrder(envs).flatMap((env) => envMetrics(env).map((metric) => ({ env, metric, title: `${envDescriptor(env).title} ${metric}` })));
}

/** The main report, from stored rows only. */
export function reportMain(meta: RunMeta, rows: EvalRow[]): Report {
  const b = meta.config.bootstrap as { resamples: number; seed: number; level: number };
  const envs = Object.keys(meta.splits);
  const cols = columns(envs);
  const primary = cols.filter((c) => c.metric === envMetrics(c.env)[0]);
  const tOf = (env: string): string => meta.targetByEnv?.[env] ?? meta.targets[0]!;
  const target = targetsLabel(Object.fromEntries(envs.map((e) => [e, tOf(e)])));
  const simulated = envs.some((e) => meta.simulated.includes(tOf(e)));
  const rowsOf = (method: string, env: string) => rows.filter((r) => r.method === method && r.env === env && r.target === tOf(env));
  const mat = (method: string, env: string, metric: Metric) => taskSeedMatrix(rowsOf(method, env), metric);
  const boot = (seedLabel: string) => ({ resamples: b.resamples, level: b.level, seed: `${b.seed}|${seedLabel}` });

  const cell: Record<string, Record<string, Interval | null>> = {};
  const delta: Record<string, Record<string, Interval | null>> = {};
  for (const m of meta.methods) {
    cell[m.name] = {};
    delta[m.name] = {};
    for (const c of cols) {
      const a = mat(m.name, c.env, c.metric);
      const v = mat('vanilla', c.env, c.metric);
      cell[m.name]![`${c.env}.${c.metric}`] = a ? bootstrapStrata([a], boot(`${m.name}|${c.env}|${c.metric}`)) : null;
      delta[m.name]![`${c.env}.${c.metric}`] = a && v ? pairedDelta([a], [v], boot(`d|${m.name}|${c.env}|${c.metric}`)) : null;
    }
    // the average of the envs' primary metrics: envs are strata, each env's tasks resampled
    const as = primary.map((c) => mat(m.name, c.env, c.metric));
    const vs = primary.map((c) => mat('vanilla', c.env, c.metric));
    const full = as.every((a) => a !== null);
    cell[m.name]!.avg = full ? bootstrapStrata(as as number[][][], boot(`${m.name}|avg`)) : null;
    delta[m.name]!.avg = full && vs.every((v) => v !== null) ? pairedDelta(as as number[][][], vs as number[][][], boot(`d|${m.name}|avg`)) : null;
  }

  // the share of executed actions the patch chose instead of the model, over every env's episodes
  const head = ['method', ...cols.map((c) => c.title), 'average', 'interventions', 'hint tokens/decision', 'valid patches'];
  const mine = (m: { name: string }) => rows.filter((r) => r.method === m.name && r.target === tOf(r.env));
  const fmtNum = (x: number | null) => (x === null ? '—' : x.toFixed(1));
  const fmtRate = (x: number | null) => (x === null ? '—' : `${(100 * x).toFixed(0)} %`);
  const tableRows = meta.methods.map((m) =>
    m.available !== true ? [m.label, m.available as string, ...cols.map(() => '—')] : [m.label, ...cols.map((c) => fmtPct(cell[m.name]![`${c.env}.${c.metric}`])), fmtPct(cell[m.name]!.avg), fmtInterventions(interventionRate(mine(m))), fmtNum(hintTokensPerDecision(mine(m))), m.name === 'vanilla' ? '—' : fmtRate(validPatchRate(mine(m)))],
  );
  const deltaRows = meta.methods
    .filter((m) => m.available === true && m.name !== 'vanilla')
    .map((m) => [m.label, ...cols.map((c) => fmtDelta(delta[m.name]![`${c.env}.${c.metric}`])), fmtDelta(delta[m.name]!.avg)]);

  // Harness-R1 against the controls that could prove it wrong: paired on the same tasks and seeds;
  // its decoding variants (sampled, best of K), where they ran, against the control and the greedy engineer
  const HEAD = 'engineer-grpo';
  const CONTROLS = ['best-fixed-patch', 'engineer-sft', 'prompted-editor', 'vanilla'];
  const VARIANTS = ['engineer-grpo-sampled', 'engineer-grpo-best-of-k'];
  const ran = (n: string) => meta.methods.some((m) => m.name === n && m.available === true);
  const labelOf = (n: string) => meta.methods.find((m) => m.name === n)?.label ?? n;
  const versusRows: string[][] = [];
  const versus: { method: string; control: string; env: Record<string, Interval | null>; average: Interval | null }[] = [];
  const pairs = [...(ran(HEAD) ? CONTROLS.filter(ran).map((ctl) => [HEAD, ctl] as const) : []), ...VARIANTS.filter(ran).flatMap((v) => ['best-fixed-patch', HEAD].filter(ran).map((ctl) => [v, ctl] as const))];
  for (const [head, ctl] of pairs) {
    const as = primary.map((c) => mat(head, c.env, c.metric));
    // the bootstrap seeds of Harness-R1's own rows are as before variants had rows here
    const tag = head === HEAD ? ctl : `${head}|${ctl}`;
    // against vanilla: the Δ vs vanilla above (the same intervals as its table)
    const zs = ctl === 'vanilla' ? [] : primary.map((c) => mat(ctl, c.env, c.metric));
    const per = primary.map((c, i) => (ctl === 'vanilla' ? delta[head]![`${c.env}.${c.metric}`]! : as[i] && zs[i] ? pairedDelta([as[i]!], [zs[i]!], boot(`v|${tag}|${c.env}|${c.metric}`)) : null));
    const avg = ctl === 'vanilla' ? delta[head]!.avg! : as.every((x) => x !== null) && zs.every((x) => x !== null) ? pairedDelta(as as number[][][], zs as number[][][], boot(`v|${tag}|avg`)) : null;
    versus.push({ method: head, control: ctl, env: Object.fromEntries(primary.map((c, i) => [c.env, per[i] ?? null])), average: avg });
    versusRows.push([`${labelOf(head)} − ${labelOf(ctl)}`, ...per.map((d) => fmtDelta(d)), fmtDelta(avg), avg === null ? '—' : avg.lo > 0 ? 'above' : avg.hi < 0 ? 'below' : 'not resolved']);
  }

  // spread across packets (methods that read packets)
  const spreadRows: (string | number)[][] = [];
  // a method reads packets when its rows name one (a fixed patch, e.g. the best fixed patch, has one row with none)
  const readsPackets = (name: string) => rows.some((r) => r.method === name && r.packet !== null);
  for (const m of meta.methods.filter((mm) => mm.available === true && mm.kind !== 'baseline' && readsPackets(mm.name))) {
    for (const c of primary) {
      const per = rowsOf(m.name, c.env).sort((a, z) => (a.packet ?? 0) - (z.packet ?? 0)).map((r) => rowMean(r, c.metric));
      const ms = meanStd(per);
      spreadRows.push([m.label, c.title, per.length, per.map((v) => (v * 100).toFixed(1)).join(', '), `${(ms.mean * 100).toFixed(1)} ± ${(ms.std * 100).toFixed(1)}`]);
    }
  }

  const ranked = meta.methods.filter((m) => m.available === true && cell[m.name]!.avg).sort((a, z) => cell[z.name]!.avg!.mean - cell[a.name]!.avg!.mean);
  const ordering = ranked.map((m) => `${m.label} ${(cell[m.name]!.avg!.mean * 100).toFixed(1)}`).join(' > ');
  const missing = meta.methods.filter((m) => m.available !== true);
  const md = [
    reportHeader(`exp main: ${target}`, meta),
    `**Protocol:** per env, ${(meta.config.train as { packets: number }).packets} failure packets, each from the vanilla rollout of a batch of ${(meta.config.train as { batchSize: number }).batchSize} train tasks; each method proposes one patch per packet (fixed baselines: one patch); each patch is scored on the held-out test tasks × seeds. A method's value per episode is its mean over its packets. Average = mean of the envs' primary metrics (${primary.map((c) => c.title).join(', ')}).`,
    '',
    '## Results (%, 95% CI)',
    '',
    mdTable(head, tableRows),
    '',
    'interventions: the share of executed actions the patch forced or rewritten instead of the model (mean over episodes, all envs; capped at the harness\'s `maxInterventionRate`). hint tokens/decision: the hint text the patch added per model decision (mean over episodes). valid patches: the share of the method\'s patches that were valid (an invalid one is scored unpatched).',
    '',
    '## Δ vs vanilla (points, paired on the same tasks and seeds)',
    '',
    mdTable(['method', ...cols.map((c) => c.title), 'average'], deltaRows),
    '',
    ...(versusRows.length
      ? [
          '## Harness-R1 against its controls (points, paired on the same tasks and seeds)',
          '',
          mdTable(['difference', ...primary.map((c) => c.title), 'average', 'average interval'], versusRows),
          '',
          '"above": the 95 % interval of the paired difference of the average lies above 0; "not resolved": it contains 0.',
          '',
        ]
      : []),
    '## Spread across packets (primary metric per packet, %)',
    '',
    spreadRows.length ? mdTable(['method', 'metric', 'packets', 'per packet', 'mean ± sd'], spreadRows) : '(no packet-reading method ran)',
    '',
    '## Reference: the paper',
    '',
    `- Paper ordering: ${PAPER_MAIN.ordering}.`,
    `- Paper numbers: ${PAPER_MAIN.numbers}.`,
    `- Ours (average, ${target}${simulated ? ', SIMULATED' : ''}): ${ordering || '(none)'}.`,
    missing.length ? `- Not run: ${missing.map((m) => `${m.label} (${m.available})`).join('; ')}.` : '',
    '',
    '## Plots',
    '',
    '![primary metrics](plots/main-primary.svg)',
    '',
    '![delta vs vanilla](plots/main-delta.svg)',
    '',
    ...(rows.some((r) => r.outcomes.some((o) => o[4] !== undefined)) ? ['![interventions](plots/main-interventions.svg)', ''] : []),
    ...(envs.includes('alfworld') ? ['![ALFWorld success per task type](plots/main-task-types.svg)', ''] : []),
    ...(spreadRows.length ? ['![spread across packets](plots/main-packets.svg)', ''] : []),
  ].join('\n');

  const avail = meta.methods.filter((m) => m.available === true);
  const sim = simulated ? ' (SIMULATED)' : '';
  // every metric of every env (WebShop: score and success), then the average of the primary ones
  const cats = [...cols.map((c) => c.title), 'average (primary)'];
  const bars = (values: (m: RunMeta['methods'][number]) => (Interval | null)[], ms = avail) => ms.map((m) => ({ name: m.label, method: m.name, values: values(m) }));
  const plots = [
    {
      name: 'main-primary',
      svg: barChart({ title: `exp main: ${target}${sim}`, subtitle: 'every metric per env, and the average of the primary ones; 95% bootstrap CI', categories: cats, yName: '%', series: bars((m) => [...cols.map((c) => cell[m.name]![`${c.env}.${c.metric}`] ?? null), cell[m.name]!.avg ?? null]) }),
    },
    {
      name: 'main-delta',
      svg: barChart({ title: `Δ vs vanilla: ${target}${sim}`, subtitle: 'paired, points, 95% bootstrap CI', categories: cats, yName: 'points', series: bars((m) => [...cols.map((c) => delta[m.name]![`${c.env}.${c.metric}`] ?? null), delta[m.name]!.avg ?? null], avail.filter((m) => m.name !== 'vanilla')) }),
    },
  ];
  // the share of executed actions the patch chose, per env, where the rows recorded it
  const ivEnvs = inReportOrder(envs).filter((env) => avail.some((m) => interventionMatrix(rowsOf(m.name, env))));
  if (ivEnvs.length) {
    plots.push({
      name: 'main-interventions',
      svg: barChart({
        title: `interventions: ${target}${sim}`,
        subtitle: 'share of executed actions the patch forced or rewrote, %, 95% bootstrap CI',
        categories: ivEnvs.map((e) => envDescriptor(e).title),
        yName: '%',
        series: bars((m) => ivEnvs.map((env) => ((x) => (x ? bootstrapStrata([x], boot(`iv|${m.name}|${env}`)) : null))(interventionMatrix(rowsOf(m.name, env))))),
      }),
    });
  }
  // ALFWorld success per task family (the family is in the task id)
  if (envs.includes('alfworld')) {
    const types = TASK_TYPES.filter((tt) => rows.some((r) => r.env === 'alfworld' && r.outcomes.some((o) => alfworldTaskType(o[0]) === tt)));
    const ofType = (rs: EvalRow[], tt: string) => rs.map((r) => ({ ...r, outcomes: r.outcomes.filter((o) => alfworldTaskType(o[0]) === tt) })).filter((r) => r.outcomes.length > 0);
    if (types.length) {
      plots.push({
        name: 'main-task-types',
        svg: barChart({
          title: `ALFWorld success per task type: ${target}${sim}`,
          subtitle: '%, 95% bootstrap CI over the type\'s tasks and seeds',
          categories: types.map((tt) => tt.replace(/_/g, ' ')),
          yName: '%',
          series: bars((m) => types.map((tt) => ((x) => (x ? bootstrapStrata([x], boot(`tt|${m.name}|${tt}`)) : null))(taskSeedMatrix(ofType(rowsOf(m.name, 'alfworld'), tt), 'success')))),
        }),
      });
    }
  }
  // one dot per packet: how much a packet-reading method's result depends on the packet it read
  const readers = avail.filter((m) => m.kind !== 'baseline' && readsPackets(m.name));
  if (spreadRows.length && readers.length) {
    plots.push({
      name: 'main-packets',
      svg: stripChart({
        title: `spread across packets: ${target}${sim}`,
        subtitle: 'primary metric of each packet\'s patch on the test tasks (dots), their mean (bar), %',
        categories: primary.map((c) => c.title),
        series: readers.map((m) => ({ name: m.label, method: m.name, values: primary.map((c) => rowsOf(m.name, c.env).sort((a, z) => (a.packet ?? 0) - (z.packet ?? 0)).map((r) => rowMean(r, c.metric))) })),
      }),
    });
  }
  const text = [`exp main — target ${target}${simulated ? ' (SIMULATED target)' : ''}; %, 95% bootstrap CI`, textTable(head, tableRows), '', `paper ordering: ${PAPER_MAIN.ordering}`, `ours (average): ${ordering}`].join('\n');
  // the same differences for a reader of summary.json (proportions, as the other intervals there)
  return { markdown: md, text, plots, ...(versus.length ? { summary: { versus } } : {}) };
}
