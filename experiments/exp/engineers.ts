/**
 * The engineers the engineer rows of `hr1 exp main` need when no `--engineer` is given: one per
 * env, trained with the default train config and the experiment's target and seed, cached under
 * runs/engineers/<hash>/<env>/. Trained on the cluster the experiment runs on.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { createHash } from 'node:crypto';
import type { Cluster } from '../../cluster/client.ts';
import { SIM_VERSION } from '../../policies/targets/sim/sim.ts';
import { DECODE_PATH_VERSION } from '../../learner/sampling.ts';
import { PATCH_LANG_VERSION } from '../../policies/engineer/patch-lang.ts';
import { hashedConfig, resolveTrainConfig, trainEngineer } from '../train.ts';
import { canonicalJson } from '../../harness/index.ts';
import { copyTag, targetCopy } from '../../policies/targets/lm/vendor.ts';
import { decodeTagOf } from '../../policies/targets/lm/zoo.ts';

/** Bumped when the episodes an engineer trains on change (1: GRPO seeds apart, splits.json recorded). */
export const SPLITS_VERSION = 1;

/** The default train config the engineers of an experiment are trained with. */
export const ENGINEER_TRAIN_CONFIG = 'experiments/configs/train.default.yaml';

/**
 * The folder the engineers of (target, seed, train config) are cached in (a target per env: the
 * whole map keys it; a config other than the default: its resolved values do, not its text; a
 * learned target: also which copy of it this machine plays, its build or the vendored one).
 */
export function engineersDir(target: string | Readonly<Record<string, string>>, seed: number, config: string = ENGINEER_TRAIN_CONFIG, trainSplits: Readonly<Record<string, string>> = {}): string {
  const t = typeof target === 'string' ? target : JSON.stringify(Object.entries(target).sort(([a], [b]) => (a < b ? -1 : 1)));
  // what the config says, not its text: a comment or a reordered key keeps the engineers it trained
  const c = config === ENGINEER_TRAIN_CONFIG ? '' : `|c${createHash('sha256').update(canonicalJson(hashedConfig(resolveTrainConfig(config, {})))).digest('hex').slice(0, 12)}`;
  // an env trained on another split than its own train split (an experiment's splits.<env>.train) keys the folder too
  const sp = Object.keys(trainSplits).length ? `|t${JSON.stringify(Object.entries(trainSplits).sort(([a], [b]) => (a < b ? -1 : 1)))}` : '';
  // the copy of each learned target that trains them (a build and the vendored fp16 copy of one config play other episodes)
  const copies = lmCopies(typeof target === 'string' ? [target] : Object.values(target));
  return join('runs', 'engineers', createHash('sha256').update(`${t}|${seed}${c}${sp}|${SIM_VERSION}|d${DECODE_PATH_VERSION}|p${PATCH_LANG_VERSION}|s${SPLITS_VERSION}${copies}`).digest('hex').slice(0, 10));
}

/** `|m…` with the copy (build or vendored, model.onnx sha256) of every lm/ target among `specs` (`+` joins several) that this machine has; '' when none. */
export function lmCopies(specs: readonly string[]): string {
  const out: string[] = [];
  for (const name of [...new Set(specs.flatMap((x) => x.split('+')).filter((x) => x.startsWith('lm/')))].sort()) {
    const id = targetCopy(name);
    // a sketch parser's decoding version too (its episodes change with it; other targets' keys stay)
    if (id) out.push(`${name}=${copyTag(id)}${decodeTagOf(name.slice(3))}`);
  }
  return out.length ? `|m${out.join(',')}` : '';
}

/**
 * Train (or find trained earlier) one engineer per env on `cluster` with the train config `config`
 * (its env, target and seed replaced by the experiment's); returns the folder for `--engineer`.
 */
export async function ensureEngineers(cluster: Cluster, envs: readonly string[], target: string | Readonly<Record<string, string>>, seed: number, o: { log?: (line: string) => void; config?: string; trainSplits?: Readonly<Record<string, string>> } = {}): Promise<string> {
  const log = o.log ?? ((l: string) => process.stderr.write(`${l}\n`));
  const config = o.config ?? ENGINEER_TRAIN_CONFIG;
  const trainSplits = Object.fromEntries(Object.entries(o.trainSplits ?? {}).filter(([env]) => envs.includes(env)));
  const dir = engineersDir(target, seed, config, trainSplits);
  for (const env of envs) {
    const out = join(dir, env);
    if (existsSync(join(out, 'engineer.onnx')) && existsSync(join(out, 'engineer-sft.onnx'))) {
      log(`engineer for ${env}: ${out} (trained earlier)`);
      continue;
    }
    const cfg = resolveTrainConfig(config, { env, target: typeof target === 'string' ? target : target[env]!, seed, out, split: trainSplits[env] });
    log(`engineer for ${env}: training (SFT, then ${cfg.grpo.iterations} GRPO iterations) into ${out}`);
    await trainEngineer(cluster, cfg, log);
  }
  return dir;
}
