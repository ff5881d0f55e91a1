/** `hr1 exp main|sweep|crosstask|ablate|coevolve`. */
import { init } from '../../cluster/init.ts';
import type { Cluster } from '../../cluster/client.ts';
import { TARGET_FLAG_ATTRIBUTES, targetFlagsOf } from '../cli/options.ts';
import { checkTargetOptionValues } from '../../policies/targets/options.ts';
import { CommandError } from './errors.ts';

export const EXP_NAMES = ['main', 'sweep', 'crosstask', 'ablate', 'coevolve'] as const;
export type ExpName = (typeof EXP_NAMES)[number];

/** The parsed flags of an `hr1 exp …` command (undefined = not given; the config and defaults decide). */
export type ExpCommandOptions = Record<string, unknown> & {
  /** `--no-train-engineer` gives false: leave the engineer rows empty when --engineer is not given */
  trainEngineer?: boolean;
};

// a method of kind 'engineer' reads an engineer folder: the engineer rows, the best fixed patch
// (chosen among its SFT rows), and any registered one; an unknown name is refused when the options resolve
const wantsEngineer = (m: unknown, exp: typeof import('../exp/index.ts')) => typeof m === 'string' && exp.methodNames().includes(m) && exp.getMethod(m).kind === 'engineer';
/** the train split of each env an experiment's `splits` overrides: its engineers train there too */
const trainSplitsOf = (splits: Record<string, { train: string }> | undefined): Record<string, string> => Object.fromEntries(Object.entries(splits ?? {}).map(([env, r]) => [env, r.train]));

/**
 * Train (or find trained earlier) the engineers of an experiment on `target`, on a cluster started
 * from the experiment's own options (so training runs where the experiment does), then `run` the
 * experiment with their folder on that cluster.
 */
async function withEngineers(
  resolved: { envs: string[]; seed: number; engineerConfig?: string | undefined; splits?: Record<string, { train: string }> | undefined } & Parameters<typeof import('../exp/index.ts').initOptionsOf>[0],
  target: string | Record<string, string>,
  run: (engineer: string, io: { cluster: Cluster; note: string }) => Promise<unknown>,
): Promise<void> {
  const exp = await import('../exp/index.ts');
  const { ensureEngineers } = await import('../exp/engineers.ts');
  // a map must cover the run's envs, checked before a cluster starts (hr1 train checks each target);
  // the whole map keys the engineers' folder, so a run on fewer envs finds the main job's engineers
  exp.targetsByEnv(target, resolved.envs, 'engineerTargets');
  const rt = await init(exp.initOptionsOf(resolved));
  try {
    const engineer = await ensureEngineers(rt.cluster, resolved.envs, target, resolved.seed, { ...(resolved.engineerConfig ? { config: resolved.engineerConfig } : {}), trainSplits: trainSplitsOf(resolved.splits) });
    await run(engineer, { cluster: rt.cluster, note: rt.note });
  } finally {
    await rt.shutdown();
  }
}

/**
 * Run an experiment from its flags. `hr1 exp main` without `--engineer` first trains the engineers
 * its engineer rows need, on the same cluster (same connection options) the experiment then runs on.
 */
export async function runExpCommand(name: ExpName, o: ExpCommandOptions): Promise<void> {
  const exp = await import('../exp/index.ts');
  const opts: Record<string, unknown> = Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined));
  const trainEngineers = opts.trainEngineer !== false;
  delete opts.trainEngineer;
  // the target settings' flags become a targetOptions map over the config file's (top level:
  // every target); their values are checked here, naming the flag, and per target with the config
  const flags = targetFlagsOf(opts);
  for (const a of TARGET_FLAG_ATTRIBUTES) delete opts[a];
  if (Object.keys(flags.raw).length > 0) {
    checkTargetOptionValues(flags.raw, flags.name);
    opts.targetOptions = flags.raw;
  }
  if (name === 'main') {
    const resolved = exp.resolveExpMain(opts);
    // before a cluster starts for the engineers' training
    exp.expTargetOptions('main', resolved, exp.mainTargets(resolved).targets);
    // llm-editor without an openai: engineer fails here, not after training the engineers
    if (resolved.methods.includes('llm-editor')) {
      const { llmEditorSettings } = await import('../runner/llm-editor.ts');
      llmEditorSettings({ engineer: resolved.engineer, llmEditor: resolved.llmEditor });
    }
    if (resolved.engineer || !trainEngineers || !resolved.methods.some((m) => wantsEngineer(m, exp))) {
      await exp.runExpMain(opts);
      return;
    }
    await withEngineers(resolved, resolved.engineerTargets ?? resolved.target, (engineer, io) => exp.runExpMain({ ...opts, engineer }, io));
    return;
  }
  if (name === 'sweep' || name === 'ablate' || name === 'crosstask' || name === 'coevolve') {
    const resolved = name === 'sweep' ? exp.resolveExpSweep(opts) : name === 'ablate' ? exp.resolveExpAblate(opts) : name === 'coevolve' ? exp.resolveExpCoevolve(opts) : exp.resolveExpCrosstask(opts);
    const run = (o: Record<string, unknown>, io?: { cluster: Cluster; note: string }) =>
      name === 'sweep' ? exp.runExpSweep(o, io) : name === 'ablate' ? exp.runExpAblate(o, io) : name === 'coevolve' ? exp.runExpCoevolve(o, io) : exp.runExpCrosstask(o, io);
    const wanted = 'methods' in resolved ? resolved.methods.some((m) => wantsEngineer(m, exp)) : wantsEngineer(resolved.method, exp);
    // engineers trained on engineerTargets (the main job's, from its cache), then applied unchanged
    if (!resolved.engineer && trainEngineers && wanted && resolved.engineerTargets) {
      await withEngineers(resolved, resolved.engineerTargets, (engineer, io) => run({ ...opts, engineer }, io));
      return;
    }
    await run(opts);
  } else throw new CommandError('BAD_OPTION', `unknown experiment "${String(name)}"; choose one of ${EXP_NAMES.join(', ')}`);
}
