import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { createHash } from 'node:crypto';
import { init } from '../../cluster/init.ts';
import { registerEngineerMethods } from '../runner/engineer-methods.ts';
import { resolveTrainConfig, trainEngineer } from '../train.ts';
import type { Cluster } from '../../cluster/client.ts';
import { SIM_VERSION } from '../../policies/targets/sim/sim.ts';

registerEngineerMethods();

/**
 * The engineer rows of `hr1 exp main` need a trained engineer per env. Without `--engineer`, train
 * one per env with the default train config and the experiment's target (cached in runs/engineers/).
 */
export async function ensureEngineers(cluster: Cluster, envs: readonly string[], target: string, seed: number): Promise<string> {
  const dir = join('runs', 'engineers', createHash('sha256').update(`${target}|${seed}|${SIM_VERSION}`).digest('hex').slice(0, 10));
  for (const env of envs) {
    const out = join(dir, env);
    if (existsSync(join(out, 'engineer.onnx')) && existsSync(join(out, 'engineer-sft.onnx'))) {
      process.stderr.write(`engineer for ${env}: ${out} (trained earlier)\n`);
      continue;
    }
    const cfg = resolveTrainConfig('experiments/configs/train.default.yaml', { env, target, seed, out });
    process.stderr.write(`engineer for ${env}: training (SFT, then ${cfg.grpo.iterations} GRPO iterations) into ${out}\n`);
    await trainEngineer(cluster, cfg, (l) => process.stderr.write(`${l}\n`));
  }
  return dir;
}

export async function runExpCli(name: string, o: Record<string, unknown>): Promise<void> {
  const exp = await import('../exp/index.ts');
  const opts = Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined));
  const trainEngineers = opts.trainEngineer !== false;
  delete opts.trainEngineer;
  const wantsEngineer = (m: unknown) => typeof m === 'string' && m.startsWith('engineer-');
  if (name === 'main') {
    const resolved = exp.resolveExpMain(opts);
    let engineer = resolved.engineer;
    let rt;
    try {
      if (!engineer && resolved.methods.some(wantsEngineer) && trainEngineers) {
        rt = await init({ inProcess: true });
        engineer = await ensureEngineers(rt.cluster, resolved.envs, resolved.target, resolved.seed);
      }
    } finally {
      await rt?.shutdown();
    }
    await exp.runExpMain({ ...opts, ...(engineer ? { engineer } : {}) });
    return;
  }
  if (name === 'sweep') await exp.runExpSweep(opts);
  else if (name === 'crosstask') await exp.runExpCrosstask(opts);
  else if (name === 'ablate') await exp.runExpAblate(opts);
  else if (name === 'coevolve') await exp.runExpCoevolve(opts);
  else throw new Error(`unknown experiment ${name}`);
}
