/** `hr1 bench learning`, `hr1 bench validator`, `hr1 bench conditioning`, `hr1 bench harness`. */
import { join } from 'node:path';
import { mkdirSync } from 'node:fs';
import { withCluster, type ClusterCliOptions } from './runtime.ts';
import { table } from './table.ts';
import { CommandError } from './errors.ts';

export interface BenchLearningOptions extends Partial<ClusterCliOptions> {
  /** train config (YAML) */
  config: string;
  /** reuse a finished hr1 train run folder */
  run?: string | undefined;
  heldout: number;
  out?: string | undefined;
}

/** `hr1 bench learning`: train (or reuse) the engineer, then the held-out Δ table. In-process without --address. */
export async function benchLearningCommand(o: BenchLearningOptions): Promise<void> {
  const { resolveTrainConfig } = await import('../train.ts');
  const { benchLearning } = await import('../bench/learning.ts');
  const cfg = resolveTrainConfig(o.config, { out: o.out });
  if (cfg.env.includes(',')) {
    const { ConfigError } = await import('../../cluster/errors.ts');
    throw new ConfigError('config.env', `bench learning reports one env; ${cfg.env} names several (train them together with hr1 train, then read each env with hr1 bench conditioning)`);
  }
  await withCluster(o, (rt) => benchLearning(rt.cluster, { config: cfg, heldoutBatches: o.heldout, ...(o.run ? { run: o.run } : {}) }), { defaultInProcess: true });
}

export interface BenchValidatorOptions extends Partial<ClusterCliOptions> {
  k: number;
  seed: number;
  /** models and dataset */
  out: string;
  targets?: string[];
  envs?: string[];
  trainBatches?: number;
  heldoutBatches?: number;
  size?: number;
  reward?: string;
  heldoutTasks?: number;
  splits?: Record<string, { train: string; heldout: string }>;
  json?: boolean;
}

/** `hr1 bench validator`: reruns saved vs Δ lost against plain K sampling. In-process without --address. */
export async function benchValidatorCommand(o: BenchValidatorOptions): Promise<void> {
  const { EpisodeCache, validatorReport } = await import('../../drivers/index.ts');
  const { checkTarget } = await import('./targets.ts');
  const { isEnvName, envNames } = await import('../../envs/registry.ts');
  for (const t of o.targets ?? []) checkTarget(t);
  for (const e of o.envs ?? []) if (!isEnvName(e)) throw new CommandError('BAD_OPTION', `--envs: unknown env "${e}"; choose from ${envNames().join(', ')}`);
  mkdirSync(o.out, { recursive: true });
  const outcomes = {
    ...(o.targets ? { targets: o.targets } : {}),
    ...(o.envs ? { envs: o.envs } : {}),
    ...(o.trainBatches ? { trainBatches: o.trainBatches } : {}),
    ...(o.heldoutBatches ? { heldoutBatches: o.heldoutBatches } : {}),
    ...(o.size ? { size: o.size } : {}),
    ...(o.reward ? { reward: o.reward as 'batch' | 'heldout' } : {}),
    ...(o.heldoutTasks ? { heldoutTasks: o.heldoutTasks } : {}),
    ...(o.splits ? { splits: o.splits } : {}),
    seed: o.seed,
  };
  if (o.reward && o.reward !== 'batch' && o.reward !== 'heldout') throw new CommandError('BAD_OPTION', `--reward: must be batch or heldout, got "${o.reward}"`);
  for (const env of Object.keys(o.splits ?? {})) if (!isEnvName(env)) throw new CommandError('BAD_OPTION', `--splits: unknown env "${env}"; choose from ${envNames().join(', ')}`);
  await withCluster(
    o,
    async (rt) => {
      const cache = new EpisodeCache(join(o.out, 'episodes.sqlite'));
      try {
        const r = await validatorReport({ cluster: rt.cluster, cache, k: o.k, seed: o.seed, outDir: o.out, outcomes, onProgress: o.json ? undefined : (p: { done: number; total: number; target: string; env: string; part: string }) => process.stderr.write(`\r${p.part} ${p.done}/${p.total} ${p.target} ${p.env}   `) });
        if (!o.json) process.stderr.write('\n');
        console.log(o.json ? JSON.stringify({ k: r.k, strategies: r.strategies, heldout: r.heldout, dataset: r.dataset, models: r.models }, null, 2) : r.table);
      } finally {
        cache.close();
      }
    },
    { defaultInProcess: true },
  );
}

/** `hr1 bench harness`: the sandboxed hook call and the harness overhead, as a table. */
export async function benchHarnessCommand(o: { seconds: number }): Promise<void> {
  const { benchHarness } = await import('../../harness/index.ts');
  const r = await benchHarness({ seconds: o.seconds });
  console.log(table(['harness', 'figure'], [
    ['sandboxed hook call p50', `${r.hookP50Us.toFixed(0)} µs`],
    ['sandboxed hook call p99', `${r.hookP99Us.toFixed(0)} µs`],
    ['bare env loop, ms an episode', r.bareEpisodeMs.toFixed(2)],
    ['harness + 2 rules + 2 code hooks, ms an episode', r.harnessEpisodeMs.toFixed(2)],
    ['overhead with that patch (× bare)', r.episodeOverheadRatio.toFixed(2)],
    ['overhead of the base harness, no patch (× bare)', r.baseOverheadRatio.toFixed(2)],
  ]));
}

export interface BenchConditioningOptions extends Partial<ClusterCliOptions> {
  env: string;
  target: string;
  engineer: string;
  batches: number;
  size: number;
  split?: string | undefined;
  seed: number;
  out?: string | undefined;
  json?: boolean | undefined;
}

/** `hr1 bench conditioning`: own vs another packet's vs the empty packet's patch, per env. In-process without --address. */
export async function benchConditioningCommand(o: BenchConditioningOptions): Promise<void> {
  const { ConfigError } = await import('../../cluster/errors.ts');
  const { benchConditioning } = await import('../bench/conditioning.ts');
  const { checkTarget } = await import('./targets.ts');
  const { ensureLmTargets, requireTargetEnvs } = await import('../exp/common.ts');
  const { trainPairs } = await import('../train.ts');
  const pairs = trainPairs(o);
  if (o.target.split(',').length !== 1 && o.target.split(',').length !== pairs.length) throw new ConfigError('--target', `give one target, or one per env (${pairs.length}); got ${o.target.split(',').length}`);
  for (const p of pairs) {
    checkTarget(p.target);
    requireTargetEnvs(p.target, [p.env], 'target');
  }
  await ensureLmTargets([...new Set(pairs.map((p) => p.target))], (l) => process.stderr.write(`${l}\n`));
  const results = await withCluster(
    o,
    async (rt) => {
      const out = [];
      for (const p of pairs) {
        process.stderr.write(`conditioning: ${o.engineer} on ${p.env} (${p.target}${p.target.startsWith('sim/') ? ', SIMULATED' : ''}), ${o.batches} held-out batches of ${o.size}\n`);
        out.push(await benchConditioning(rt.cluster, { ...p, engineer: o.engineer, batches: o.batches, size: o.size, seed: o.seed, ...(o.split ? { split: o.split } : {}), ...(o.out ? { out: o.out } : {}), progress: 'auto' }));
      }
      return out;
    },
    { defaultInProcess: true },
  );
  if (o.json) {
    console.log(JSON.stringify(results.length === 1 ? results[0] : results));
    return;
  }
  const ci = (x: { mean: number; lo: number; hi: number }) => `${x.mean >= 0 ? '+' : ''}${x.mean.toFixed(3)} [${x.lo.toFixed(3)}, ${x.hi.toFixed(3)}]`;
  console.log(table(['env', 'target', 'episodes', 'Δ own', 'Δ other packet', 'Δ empty packet', 'gain vs other (95% CI)', 'gain vs empty (95% CI)', 'interventions (own)', 'same patch'], results.map((r) => [r.env, r.target, r.episodes, r.own_delta.toFixed(3), r.other_delta.toFixed(3), r.empty_delta.toFixed(3), ci(r.conditioning_gain), ci(r.empty_gain), `${(r.own_intervention_rate * 100).toFixed(1)}%`, `${(r.same_patch_rate * 100).toFixed(0)}%`])));
}

export interface BenchTrainCliOptions {
  config: string;
  target?: string;
  iterations?: number;
  maxStaleness: number;
  clusters: string;
  nodes: number;
  repeats: number;
  json?: boolean;
}

/** `hr1 bench train`: synchronous vs pipelined GRPO. */
export async function benchTrainCommand(o: BenchTrainCliOptions): Promise<void> {
  const { ConfigError } = await import('../../cluster/errors.ts');
  const { resolveTrainConfig, trainPairs } = await import('../train.ts');
  const clusters = o.clusters.split(',').map((c) => c.trim()).filter(Boolean);
  const bad = clusters.find((c) => c !== 'embedded' && c !== 'nodes');
  if (bad !== undefined || clusters.length === 0) throw new ConfigError('--clusters', `unknown cluster "${bad ?? ''}": give embedded, nodes, or both (embedded,nodes)`);
  const cfg = resolveTrainConfig(o.config, { ...(o.target ? { target: o.target } : {}) });
  if (o.iterations !== undefined) cfg.grpo.iterations = o.iterations;
  const { ensureLmTargets } = await import('../exp/common.ts');
  await ensureLmTargets([...new Set(trainPairs(cfg).flatMap((p) => p.targets))], (l) => process.stderr.write(`${l}\n`));
  const { benchTrain } = await import('../bench/train.ts');
  await benchTrain({ config: cfg, clusters: clusters as ('embedded' | 'nodes')[], maxStaleness: o.maxStaleness, nodes: o.nodes, repeats: o.repeats, json: !!o.json });
}
