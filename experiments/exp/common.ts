import { SIM_VERSION } from '../../policies/targets/sim/sim.ts';
/**
 * What every experiment shares: the common options (seed, envs, test and train sizes, the
 * editor, the engineer path, the bootstrap, rollouts, cluster), the run folder, the cluster, the
 * progress, and writing the report. Each experiment adds its own options and plan.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { ENV_NAMES, envDescriptor, envNames, isEnvName, listTasks } from '../../envs/registry.ts';
import { z } from 'zod';
import { init, type InitOptions } from '../../cluster/init.ts';
import type { Cluster } from '../../cluster/client.ts';
import { formatLogRecord } from '../../cluster/logs.ts';
import { parseTargetSpec } from '../../policies/targets/spec.ts';
import { targetOptionsByTarget, type TargetOptions } from '../../policies/targets/options.ts';
import { checkTarget } from '../commands/targets.ts';
import { buildZoo, readMeta, resolveConfig, staleBuild } from '../../policies/targets/lm/zoo.ts';
import { playableMeta } from '../../policies/targets/lm/vendor.ts';
import { configHash, resolveOptions, withConfigFile } from '../runner/config.ts';
import { ExpError } from '../runner/errors.ts';
import { ExpRun, episodesOf, rolesOf, testTasks, trainBatches, type EvalRow } from '../runner/evaluate.ts';
import { assertDisjoint, describeSet, type EpisodeSet } from '../../drivers/splits.ts';
import { TRAIN_SPLITS_FILE, findTrainSplits } from '../train-plan.ts';
import { getMethod, methodAvailable, type Method, type MethodOptions } from '../runner/methods.ts';
import { LlmEditorSchema } from '../runner/llm-editor.ts';
import { makeProgress, type ProgressMode } from '../runner/progress.ts';
import { formatEndpointStats } from '../../drivers/client-stats.ts';
import { RUN_FILES, RunDir, type RunMeta } from '../runner/run-dir.ts';
import { rowsToCsv } from '../report/data.ts';
import { svgToPng } from '../report/plots.ts';
import { summarizeRun } from '../report/summary.ts';
import { expScalars, scalarsToCsv } from '../report/scalars.ts';


/** @default 0 */
export const DEFAULT_SEED = 0;
/** Test episodes per env: all tasks of the test splits, 3 seeds. */
export const DEFAULT_TEST = { tasks: 'all' as number | 'all', seeds: [0, 1, 2] };
/** 5 packets per env, each from a train batch of 16 tasks. */
export const DEFAULT_TRAIN = { packets: 5, batchSize: 16 };
/** The prompted editor submits its first of 4 proposals. */
export const DEFAULT_EDITOR: MethodOptions['editor'] = { k: 4, select: 'first' };
/** 1000 seeded resamples, 95% intervals. */
export const DEFAULT_BOOTSTRAP = { resamples: 1000, seed: 0, level: 0.95 };
/** One target actor, 8 episodes a message. */
export const DEFAULT_ROLLOUT = { replicas: 1, chunk: 8 };

const posInt = z.number({ error: 'must be a positive integer' }).int('must be a positive integer').positive('must be a positive integer');
// the form, a sim profile that exists, an lm/ name the zoo knows: checked before anything runs
const target = z.string().superRefine((s, ctx) => {
  try {
    parseTargetSpec(s);
  } catch {
    ctx.addIssue({ code: 'custom', message: 'must be a target spec: sim/<profile>, openai:<base-url>#<model> or lm/<name>' });
    return;
  }
  try {
    checkTarget(s);
  } catch (e) {
    ctx.addIssue({ code: 'custom', message: (e as Error).message });
  }
});

/** The test episodes option with an experiment's own defaults. */
export function testSchema(d: { tasks: number | 'all'; seeds: number[] }) {
  return z
    .strictObject({
      tasks: z.union([posInt, z.literal('all')], { error: 'must be a positive integer or "all"' }).default(d.tasks),
      seeds: z.array(z.number().int('must be an integer').nonnegative('must be ≥ 0')).min(1, 'give at least one seed').default(d.seeds),
    })
    .prefault({});
}

/** The train packets option with an experiment's own defaults. */
export function trainSchema(d: { packets: number; batchSize: number }) {
  return z
    .strictObject({
      packets: posInt.default(d.packets),
      batchSize: z.number().int('must be an integer').min(10, 'a packet comes from 10 to 20 train tasks').max(20, 'a packet comes from 10 to 20 train tasks').default(d.batchSize),
    })
    .prefault({});
}

export const commonShape = {
  /** a YAML file of options; other options override it */
  config: z.string().optional(),
  seed: z.number().int('must be an integer').nonnegative('must be ≥ 0').default(DEFAULT_SEED),
  /** the run folder. @default runs/<exp>-<config hash> */
  out: z.string().optional(),
  envs: z.array(z.string().refine(isEnvName, { error: () => `must be one of ${envNames().join(', ')}` })).min(1, 'name at least one env').default([...ENV_NAMES]),
  test: testSchema(DEFAULT_TEST),
  train: trainSchema(DEFAULT_TRAIN),
  editor: z
    .strictObject({
      k: posInt.default(DEFAULT_EDITOR.k),
      select: z.enum(['first', 'best-of-k'], { error: 'must be "first" or "best-of-k"' }).default(DEFAULT_EDITOR.select),
    })
    .prefault({}),
  /**
   * per env, which splits play the train role (packets, and the engineers' SFT and GRPO batches
   * when exp main trains them) and the test role, over the env's own (EnvSplits); their tasks must
   * be disjoint. E.g. `alfworld: {train: seen_dev, test: [seen_test]}` for targets trained on valid_train.
   */
  splits: z
    .record(z.string(), z.strictObject({ train: z.string(), test: z.array(z.string()).min(1, 'name at least one test split') }))
    .superRefine((m, ctx) => {
      for (const [env, r] of Object.entries(m)) {
        if (!isEnvName(env)) {
          ctx.addIssue({ code: 'custom', path: [env], message: `unknown env "${env}": must be one of ${envNames().join(', ')}` });
          continue;
        }
        const names = envDescriptor(env).splits.names;
        for (const [i, sp] of [r.train, ...r.test].entries()) if (!names.includes(sp)) ctx.addIssue({ code: 'custom', path: [env, i === 0 ? 'train' : 'test'], message: `${env} has no split "${sp}"; use one of ${names.join(', ')}` });
        if (![r.train, ...r.test].every((sp) => names.includes(sp))) continue;
        const train = new Set(listTasks(env, r.train));
        const shared = r.test.flatMap((sp) => listTasks(env, sp)).filter((t) => train.has(t));
        if (shared.length) ctx.addIssue({ code: 'custom', path: [env], message: `${env}: the train split ${r.train} and the test splits ${r.test.join(', ')} share ${shared.length} tasks (${shared[0]}, …); give splits with disjoint tasks` });
      }
    })
    .optional(),
  /** an engineer checkpoint/ONNX path for engineer methods; `openai:<base-url>#<model>` for llm-editor */
  engineer: z.string().optional(),
  /** the prompted LLM editor's settings (experiments/runner/llm-editor.ts); absent: its defaults */
  llmEditor: LlmEditorSchema.optional(),
  bootstrap: z
    .strictObject({
      resamples: z.number().int().min(100, 'use at least 100 resamples').default(DEFAULT_BOOTSTRAP.resamples),
      seed: z.number().int().nonnegative().default(DEFAULT_BOOTSTRAP.seed),
      level: z.number().gt(0.5, 'must be in (0.5, 1)').lt(1, 'must be in (0.5, 1)').default(DEFAULT_BOOTSTRAP.level),
    })
    .prefault({}),
  rollout: z
    .strictObject({ replicas: posInt.default(DEFAULT_ROLLOUT.replicas), chunk: posInt.default(DEFAULT_ROLLOUT.chunk) })
    .prefault({}),
  /**
   * target settings (policies/targets/options.ts): settings at the top level for every target,
   * and entries keyed by a target spec for that target; checked per target by expTargetOptions
   */
  targetOptions: z.record(z.string(), z.unknown(), { error: 'must be a map of target settings (temperature, topP, …) and of target specs to such maps' }).optional(),
  // where to run (not part of the config hash)
  address: z.string().optional(),
  inProcess: z.boolean().default(false),
  cluster: z.string().default('default'),
  user: z.string().optional(),
  pass: z.string().optional(),
  token: z.string().optional(),
  creds: z.string().optional(),
  progress: z.enum(['auto', 'bars', 'lines', 'silent']).default('auto'),
};

export { target as targetSchema, posInt };
export { targetEnvs } from '../../policies/targets/envs-of.ts';
import { targetEnvs } from '../../policies/targets/envs-of.ts';

/**
 * A target for every env (`target: {alfworld: lm/…, webshop: lm/…}` in a config), or one spec for
 * all; on the command line `--target alfworld=lm/a,webshop=lm/b` is the map.
 */
export const targetPerEnvSchema = z.preprocess(
  (v) => (typeof v === 'string' && /^[a-z][\w-]*=/.test(v) ? Object.fromEntries(v.split(',').map((kv) => [kv.slice(0, kv.indexOf('=')).trim(), kv.slice(kv.indexOf('=') + 1).trim()])) : v),
  z.union([target, z.record(z.string().refine(isEnvName, { error: () => `must be one of ${envNames().join(', ')}` }), target)], { error: 'must be a target spec, or a map of env to target spec (alfworld: lm/…)' }),
);

/**
 * The targets an engineer trains on in one env: a target spec, or several joined by `+`
 * (`lm/a+lm/b`: hr1 train takes them in turn; docs/ENGINEER.md "Several targets per env").
 */
const engineerTarget = z.string().superRefine((s, ctx) => {
  const parts = s.split('+').map((x) => x.trim());
  if (parts.some((x) => x === '')) ctx.addIssue({ code: 'custom', message: `"${s}" has an empty target; join an env's targets with + (lm/a+lm/b)` });
  for (const part of parts.filter((x) => x !== '')) {
    const r = target.safeParse(part);
    if (!r.success) ctx.addIssue({ code: 'custom', message: `${parts.length > 1 ? `${part}: ` : ''}${r.error.issues[0]!.message}` });
  }
});

/** `engineerTargets`: as {@link targetPerEnvSchema}, each spec possibly several targets joined by `+`. */
export const engineerTargetPerEnvSchema = z.preprocess(
  (v) => (typeof v === 'string' && /^[a-z][\w-]*=/.test(v) ? Object.fromEntries(v.split(',').map((kv) => [kv.slice(0, kv.indexOf('=')).trim(), kv.slice(kv.indexOf('=') + 1).trim()])) : v),
  z.union([engineerTarget, z.record(z.string().refine(isEnvName, { error: () => `must be one of ${envNames().join(', ')}` }), engineerTarget)], { error: 'must be a target spec (or several joined by +), or a map of env to such a spec (alfworld: lm/a+lm/b)' }),
);

/**
 * Where the engineers of an experiment other than `main` come from when no `engineer` folder is
 * given: trained (or found trained earlier, under runs/engineers/<hash>/) on `engineerTargets`, one
 * per env, with the train config `engineerConfig`, exactly as `hr1 exp main` trains them, so a
 * sweep uses the main job's engineers, not retuned.
 */
export const engineerTrainShape = {
  /** the targets the engineers are trained on (a spec, or a map of env to spec; a spec may join several with `+`); absent: an engineer row needs `engineer` */
  engineerTargets: engineerTargetPerEnvSchema.optional(),
  /** the `hr1 train` config the engineers are trained with. @default experiments/configs/train.default.yaml */
  engineerConfig: z.string().refine((f) => existsSync(f), { error: 'does not exist; give an hr1 train config (e.g. experiments/configs/train.default.yaml)' }).optional(),
};

/** The target of each of `envs`: the one spec, or the map's entry (ExpError naming the env a map lacks). */
export function targetsByEnv(t: string | Record<string, string>, envs: readonly string[], path = 'target'): Record<string, string> {
  const out: Record<string, string> = {};
  for (const env of envs) {
    const spec = typeof t === 'string' ? t : t[env];
    if (!spec) throw new ExpError('EXP_CONFIG', `${path}: no target for ${env}; add ${env}: <spec> to the map (it has ${Object.keys(t as object).join(', ') || 'none'}) or drop ${env} from --envs`, { path: `${path}.${env}` });
    out[env] = spec;
  }
  return out;
}

/** How a run names its targets: the one spec, or `spec (env), …` when envs have their own. */
export function targetsLabel(byEnv: Record<string, string>): string {
  const specs = [...new Set(Object.values(byEnv))];
  return specs.length === 1 ? specs[0]! : Object.entries(byEnv).map(([env, spec]) => `${spec} (${env})`).join(', ');
}

export type CommonOptions = z.output<z.ZodObject<typeof commonShape>>;

/** Options that only say where and how to run: they change no number, so no hash. */
const RUNTIME_KEYS = ['config', 'out', 'address', 'inProcess', 'cluster', 'user', 'pass', 'token', 'creds', 'progress', 'rollout', 'bootstrap'];

/** Resolve an experiment's options: a config file under the given ones, then the schema. */
export function resolveExp<S extends z.ZodType>(schema: S, input: unknown, name: string): z.output<S> {
  return resolveOptions(schema, withConfigFile(input), name);
}

/** The part of the options that decides the results. */
export function scienceOf(o: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(o).filter(([k, v]) => !RUNTIME_KEYS.includes(k) && v !== undefined));
}

export function defaultRunDir(exp: string, o: Record<string, unknown>): string {
  // the SIMULATED targets' version decides numbers too
  return `runs/${exp}-${configHash({ exp, sim: SIM_VERSION, ...scienceOf(o) })}`;
}

/**
 * Each target's canonical settings from the options' `targetOptions` (flags over the config
 * file), checked against the target's kind and the envs; a TargetOptionsError naming
 * `<exp>.targetOptions.<key>` otherwise. Called before the run folder or the cluster exist.
 */
export function expTargetOptions(exp: string, o: Pick<CommonOptions, 'targetOptions' | 'envs'>, targets: readonly string[]): Map<string, TargetOptions> {
  return targetOptionsByTarget(targets, o.targetOptions, { path: `${exp}.targetOptions`, envs: o.envs, flags: true });
}

/** Where an experiment runs: the cluster options of its resolved options (flags over the config file). */
export function initOptionsOf(o: Pick<CommonOptions, 'address' | 'inProcess' | 'cluster' | 'user' | 'pass' | 'token' | 'creds'>): InitOptions {
  return { ...(o.address ? { address: o.address } : {}), inProcess: o.inProcess, cluster: o.cluster, user: o.user, pass: o.pass, token: o.token, creds: o.creds };
}

/** How an experiment is run from code: a cluster to use, output, and a hook for tests. */
export interface ExpIO {
  /** use this cluster instead of starting one from the options */
  cluster?: Cluster;
  /** how that cluster was set up (`Runtime.note`): logged at the start as for a cluster the runner starts */
  note?: string;
  /** where the final table goes. @default console.log */
  stdout?: (text: string) => void;
  /** called after each completed unit (tests stop a run part way by throwing here) */
  onUnitDone?: (key: string) => void;
}

/** A report: markdown for report.md, text for the terminal, charts by name. */
export interface Report {
  markdown: string;
  text: string;
  plots: { name: string; svg: string }[];
  /** fields an experiment adds to summary.json (exp main: `versus`, Harness-R1 against its controls) */
  summary?: Record<string, unknown>;
}

export interface ExpResult {
  exp: string;
  runDir: string;
  /** units run now, and units found done in the run folder */
  ran: number;
  skipped: number;
  ms: number;
  meta: RunMeta;
  rows: EvalRow[];
  report: Report;
}

export function methodOptionsOf(o: CommonOptions): MethodOptions {
  return { engineer: o.engineer, editor: o.editor, ...(o.llmEditor ? { llmEditor: o.llmEditor } : {}) };
}

/** Look up methods and their availability for run.json. */
export function methodsMeta(names: readonly string[], o: CommonOptions, path = 'methods'): { methods: Method[]; meta: RunMeta['methods'] } {
  // a method with settings is bound to the run's options here, before anything runs (it may refuse them)
  const mo = methodOptionsOf(o);
  const methods = names.map((n, i) => ((m) => (m.configure ? m.configure(mo) : m))(getMethod(n, `${path}[${i}]`)));
  return { methods, meta: methods.map((m) => ({ name: m.name, kind: m.kind, label: m.label ?? m.name, ...(m.fixed ? { fixed: true } : {}), available: methodAvailable(m, mo), ...(m.settings ? { version: m.version ?? '', settings: m.settings } : {}) })) };
}

export function simulatedOf(targets: readonly string[]): string[] {
  return targets.filter((t) => parseTargetSpec(t).kind === 'sim');
}

/** Fail early when a single-target experiment's envs are not all playable by its target. */
export function requireTargetEnvs(target: string, envs: readonly string[], path: string): void {
  const ok = targetEnvs(target);
  const bad = ok ? envs.filter((e) => !ok.includes(e)) : [];
  if (bad.length) throw new ExpError('EXP_CONFIG', `${path}: ${target} was trained on ${ok!.join(', ')} only, not ${bad.join(', ')}; give --envs ${ok!.join(',')}`, { path });
}

/**
 * Build the `lm/` zoo targets among `targets` that are not built yet (deterministic and cached,
 * like \`hr1 zoo build\`), logging each. Remote nodes need the same zoo folder (HR1_ZOO_DIR) or
 * their own \`hr1 zoo build\`: a build gives the same weights on any machine.
 */
export async function ensureLmTargets(targets: readonly string[], log: (line: string) => void): Promise<void> {
  const names = [...new Set(targets.map((t) => parseTargetSpec(t)).flatMap((t) => (t.kind === 'lm' ? [t.name] : [])))];
  // not built, or built before the decode graph (buildZoo re-exports those from their checkpoints)
  const missing = names.filter((n) => {
    const c = resolveConfig(n);
    // not built: built now, unless a vendored copy of this config plays it (policies/targets/lm/vendor.ts)
    if (!readMeta(c)) return !playableMeta(c);
    return staleBuild(c);
  });
  if (!missing.length) return;
  log(`building lm targets not in the zoo yet (or exported before the decode graph): ${missing.map((n) => `lm/${n}`).join(', ')} (hr1 zoo build; cached afterwards)`);
  await buildZoo({ only: missing, log });
}

/**
 * Check that the run's episode sets share no (task, seed) — per env the packet batches, the test
 * episodes, and, when `engineer` names a train run folder (one per env or one for all), that run's
 * SFT and GRPO episodes (its splits.json) — and describe them for run.json. Throws
 * SplitOverlapError on an overlap, ExpError when an engineer run has no splits.json.
 */
export function checkSplits(o: Pick<CommonOptions, 'envs' | 'seed' | 'test' | 'train' | 'splits'> & { engineer?: string | undefined }, useEngineer: boolean, packets?: (env: string) => EpisodeSet): NonNullable<RunMeta['disjoint']> {
  const sets: EpisodeSet[] = [];
  const engineers: NonNullable<RunMeta['disjoint']>['engineers'] = {};
  for (const env of o.envs) {
    // the episodes packets may come from: the evaluation's train batches, or an experiment's own (crosstask)
    sets.push(packets ? packets(env) : { name: 'evaluation packets', env, episodes: trainBatches(env, { packets: o.train.packets, batchSize: o.train.batchSize, seed: o.seed, roles: o.splits?.[env] }).flat() });
    sets.push({ name: 'test', env, episodes: episodesOf(testTasks(env, o.test.tasks, o.seed, {}, o.splits?.[env]), o.test.seeds) });
    if (!useEngineer || !o.engineer) continue;
    const found = findTrainSplits(o.engineer, env);
    if (!found) {
      // an engineer for this env must exist for its rows to run; without one the method reports itself
      if (![join(o.engineer, env, 'engineer.onnx'), join(o.engineer, 'engineer.onnx')].some((f) => existsSync(f))) continue;
      throw new ExpError('EXP_CONFIG', `the engineer under ${o.engineer} has no ${TRAIN_SPLITS_FILE} for ${env} (it was trained before runs recorded their episodes), so the run cannot check that it was not trained on the episodes it is evaluated on; train it again with hr1 train`, { path: 'engineer', data: { engineer: o.engineer, env } });
    }
    const { file, splits: ts } = found;
    const e = ts.envs?.[env];
    if (!e) continue; // an engineer trained for other envs: its rows report the missing model
    // the SFT rows it learned from (0: the teacher's proposals all failed verification and sft.abstain
    // was off, so its SFT-only model is untrained; abstain rows: it learned the empty patch instead)
    const sftFile = [join(dirname(file), 'sft.jsonl'), join(dirname(file), `sft-${env}.jsonl`)].find((f) => existsSync(f));
    const lines = sftFile ? readFileSync(sftFile, 'utf8').split('\n').filter((l) => l.trim() !== '') : undefined;
    const sftRows = lines?.length;
    const abstain = lines ? lines.filter((l) => (JSON.parse(l) as { teacher?: { name?: string } }).teacher?.name === 'abstain').length : 0;
    engineers[env] = { dir: dirname(file), target: e.target, ...(e.targets ? { targets: e.targets } : {}), split: e.split, ...(sftRows !== undefined ? { sftRows } : {}), ...(abstain ? { abstainRows: abstain } : {}) };
    sets.push({ name: 'engineer SFT', env, episodes: [...e.sft, ...e.verify] }, { name: 'engineer GRPO', env, episodes: e.grpo });
  }
  assertDisjoint(sets);
  return { sets: sets.map(describeSet), engineers };
}

export function splitsMeta(o: CommonOptions): RunMeta['splits'] {
  const out: RunMeta['splits'] = {};
  for (const env of o.envs) {
    const s = rolesOf(env, o.splits?.[env]);
    out[env] = { train: s.train, test: [...s.test], testTasks: testTasks(env, o.test.tasks, o.seed, {}, o.splits?.[env]).length, seeds: o.test.seeds };
  }
  return out;
}

/** Write report.md, results.csv, summary.json, scalars.csv and plots (SVG and PNG) from a report and the rows. */
export function writeReport(run: RunDir, meta: RunMeta, rows: readonly EvalRow[], report: Report): void {
  run.writeFile(RUN_FILES.report, report.markdown);
  run.writeFile(RUN_FILES.csv, rowsToCsv(meta.exp, rows));
  const summary = summarizeRun(meta, rows);
  run.writeFile(RUN_FILES.summary, `${JSON.stringify({ ...summary, ...(report.summary ?? {}) }, null, 2)}\n`);
  run.writeFile(RUN_FILES.scalars, scalarsToCsv(expScalars(rows, summary)));
  for (const p of report.plots) {
    run.writeFile(`${RUN_FILES.plots}/${p.name}.svg`, p.svg);
    run.writeFile(`${RUN_FILES.plots}/${p.name}.png`, svgToPng(p.svg));
  }
}

/** The lines every report starts with: what ran, on which targets, which are SIMULATED. */
export function reportHeader(title: string, meta: RunMeta): string {
  const sim = meta.simulated.length ? `SIMULATED targets: ${meta.simulated.join(', ')} (an env expert corrupted by failure modes; not language models).` : 'None of them is SIMULATED.';
  const real = meta.targets.filter((t) => !meta.simulated.includes(t));
  const splits = Object.entries(meta.splits)
    .map(([env, s]) => `${env}: packets from ${s.train}, tested on ${s.test.join('+')} (${s.testTasks} tasks × seeds ${s.seeds.join(',')})`)
    .join('; ');
  const b = meta.config.bootstrap as { resamples: number; seed: number; level: number } | undefined;
  return [
    `# ${title}`,
    '',
    `**Targets:** ${meta.targets.join(', ')}. ${sim}${real.length && meta.simulated.length ? ` Other targets: ${real.join(', ')}.` : ''}`,
    '',
    ...(meta.models && Object.keys(meta.models).length
      ? [
          `**Learned targets' weights:** ${Object.entries(meta.models)
            .map(([t, m]) => `${t}: ${m ? `${m.source === 'built' ? 'this machine\'s build' : 'the vendored copy'} (model.onnx sha256 ${m.sha256.slice(0, 12)}…)` : 'no copy on the driver\'s machine (the nodes played their own)'}`)
            .join('; ')}. A build plays before the vendored copy of the same config and may differ from it (fp32 against fp16).`,
          '',
        ]
      : []),
    `**Splits:** ${splits}.`,
    '',
    ...(meta.disjoint
      ? [
          `**Disjoint:** checked before the run, no two of these share a (task, seed): ${meta.disjoint.sets.map((x) => `${x.env} ${x.name} (${x.episodes} episodes, seeds ${x.seeds ? `${x.seeds[0]}–${x.seeds[1]}` : '–'})`).join('; ')}.${Object.keys(meta.disjoint.engineers).length ? ` Engineers trained in ${Object.entries(meta.disjoint.engineers).map(([env, e]) => `${env}: ${e.dir} on ${e.targets ? `${e.targets.join(' + ')} (the engineer's own: ${e.target})` : e.target} (${e.split}${e.sftRows !== undefined ? `; ${e.sftRows} SFT rows${e.sftRows === 0 ? ': no teacher proposal passed verification, so its SFT-only engineer is untrained' : e.abstainRows ? ': no teacher proposal passed verification, so they are the empty patch on each packet (sft.abstain): it learned to leave the harness as it is' : ''}` : ''})`).join('; ')}.` : ''}`,
          '',
        ]
      : []),
    `**Intervals:** ${Math.round((b?.level ?? 0.95) * 100)}% percentile bootstrap over tasks and seeds (tasks resampled, then seeds within each task; ${b?.resamples ?? 1000} resamples, seed ${b?.seed ?? 0}); Δ intervals resample paired differences (same task, same seed). Numbers are percentage points.`,
    '',
  ].join('\n');
}

/**
 * Run an experiment: run folder, meta, cluster, progress; `plan` runs the units; `reporter`
 * builds the report from the stored rows only (as `hr1 report` does).
 */
export async function runExperiment(
  exp: string,
  o: CommonOptions,
  meta: Omit<RunMeta, 'kind' | 'exp' | 'config'>,
  io: ExpIO,
  plan: (x: ExpRun) => Promise<void>,
  reporter: (meta: RunMeta, rows: EvalRow[]) => Report,
): Promise<ExpResult> {
  const t0 = performance.now();
  const targetOptions = expTargetOptions(exp, o, meta.targets);

  const dir = o.out ?? defaultRunDir(exp, o as unknown as Record<string, unknown>);
  const run = new RunDir(dir);
  const config = { ...scienceOf(o as unknown as Record<string, unknown>), bootstrap: o.bootstrap };
  const full: RunMeta = { kind: 'hr1-exp/1', exp, config, ...meta };
  run.writeMeta(full);
  const progress = makeProgress(o.progress as ProgressMode);
  let rt: Awaited<ReturnType<typeof init>> | null = null;
  let x: ExpRun | null = null;
  try {
    const cluster = io.cluster ?? (rt = await init(initOptionsOf(o))).cluster;
    // warnings and errors that actors on other nodes forward (cluster/logs.ts), through the progress printer
    if (rt) rt.cluster.onLog((r) => progress.log(formatLogRecord(r)), { level: 'warn', remoteOnly: true });
    const note = rt?.note ?? io.note;
    if (note !== undefined) progress.log(`hr1 exp ${exp}: ${note}; run folder ${dir}`);
    if (full.simulated.length) progress.log(`SIMULATED targets: ${full.simulated.join(', ')}`);
    await ensureLmTargets(meta.targets, (l) => progress.log(l));
    x = new ExpRun(cluster, run, progress, o.rollout, {}, io.onUnitDone, targetOptions);
    await plan(x);
  } finally {
    // what each endpoint target's client did (requests, tokens, retries, latencies), also when the run failed
    if (x) for (const c of x.clientStats.totals()) progress.log(formatEndpointStats(c));
    progress.stop();
    if (rt) await rt.shutdown();
    if (!x || x.ran + x.skipped === 0) run.close();
  }
  const rows = run.rows() as EvalRow[];
  const report = reporter(full, rows);
  writeReport(run, full, rows, report);
  const ms = performance.now() - t0;
  run.writeFile(RUN_FILES.timing, `${JSON.stringify({ ms: Math.round(ms), ran: x.ran, skipped: x.skipped }, null, 2)}\n`);
  run.close();
  (io.stdout ?? ((s: string) => console.log(s)))(report.text);
  return { exp, runDir: dir, ran: x.ran, skipped: x.skipped, ms, meta: full, rows, report };
}

/** Fail early when an experiment's single method cannot run. */
export function requireAvailable(meta: RunMeta['methods'][number], path: string): void {
  if (meta.available !== true) throw new ExpError('EXP_CONFIG', `${path}: ${meta.name} is ${meta.available}; pick another method (e.g. prompted-editor)`, { path });
}

/** The unit key: everything that decides the unit's result. */
export function unitKey(parts: Record<string, unknown>): string {
  return `${String(parts.exp)}|${String(parts.env)}|${String(parts.target)}|${String(parts.method)}|${String(parts.packet ?? '-')}|${String(parts.variant ?? '')}|${configHash(parts, 12)}`;
}
