/** `hr1 train`: resolve the config, build a missing lm/ target, train on the given cluster, print the summary. */
import { startCluster, type ClusterCliOptions } from './runtime.ts';
import { checkTarget } from './targets.ts';
import { table } from './table.ts';

export interface TrainCommandOptions extends ClusterCliOptions {
  env?: string | undefined;
  target?: string | undefined;
  config?: string | undefined;
  iterations?: number | undefined;
  seed?: number | undefined;
  out?: string | undefined;
  resume?: boolean | undefined;
  validator?: string | undefined;
}

export async function trainCommand(o: TrainCommandOptions): Promise<void> {
  const { resolveTrainConfig, trainEngineer } = await import('../train.ts');
  const cfg = resolveTrainConfig(o.config, { env: o.env, target: o.target, seed: o.seed, out: o.out, validator: o.validator });
  if (o.iterations !== undefined) cfg.grpo.iterations = o.iterations;
  const { trainPairs } = await import('../train.ts');
  const { ensureLmTargets, requireTargetEnvs } = await import('../exp/common.ts');
  const pairs = trainPairs(cfg);
  for (const p of pairs) {
    checkTarget(p.target);
    requireTargetEnvs(p.target, [p.env], 'target');
  }
  await ensureLmTargets([...new Set(pairs.map((p) => p.target))], (l) => process.stderr.write(`${l}\n`));
  const rt = await startCluster(o);
  try {
    const r = await trainEngineer(rt.cluster, cfg, undefined, { resume: o.resume ?? false });
    const g = r.iterations.filter((x) => x.phase === 'grpo');
    console.log(table(['phase', 'iterations', 'first', 'last'], [
      ['sft loss', r.iterations.filter((x) => x.phase === 'sft').length, (r.iterations.find((x) => x.phase === 'sft')?.loss ?? NaN).toFixed(4), (r.sft.finalLoss ?? NaN).toFixed(4)],
      ['grpo mean Δ', g.length, (g[0]?.meanDelta ?? NaN).toFixed(3), (g[g.length - 1]?.meanDelta ?? NaN).toFixed(3)],
    ]));
    console.log(`\nengineer: ${r.onnx} (ONNX), ${r.checkpoint} (torch); per-iteration log ${r.out}/iterations.jsonl; SFT rows ${r.sft.rows} (${r.sft.representable} used)`);
  } finally {
    await rt.shutdown();
  }
}
