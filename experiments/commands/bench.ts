/** `hr1 bench learning`, `hr1 bench validator`, `hr1 bench harness`. */
import { join } from 'node:path';
import { mkdirSync } from 'node:fs';
import { withCluster, type ClusterCliOptions } from './runtime.ts';
import { table } from './table.ts';

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
  await withCluster(o, (rt) => benchLearning(rt.cluster, { config: cfg, heldoutBatches: o.heldout, ...(o.run ? { run: o.run } : {}) }), { defaultInProcess: true });
}

export interface BenchValidatorOptions extends Partial<ClusterCliOptions> {
  k: number;
  seed: number;
  /** models and dataset */
  out: string;
}

/** `hr1 bench validator`: reruns saved vs Δ lost against plain K sampling. In-process without --address. */
export async function benchValidatorCommand(o: BenchValidatorOptions): Promise<void> {
  const { EpisodeCache, validatorReport } = await import('../../drivers/index.ts');
  mkdirSync(o.out, { recursive: true });
  await withCluster(
    o,
    async (rt) => {
      const cache = new EpisodeCache(join(o.out, 'episodes.sqlite'));
      try {
        const r = await validatorReport({ cluster: rt.cluster, cache, k: o.k, seed: o.seed, outDir: o.out, onProgress: (p: unknown) => process.stderr.write(`\r${JSON.stringify(p).slice(0, 120)}   `) });
        process.stderr.write('\n');
        console.log(r.table);
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
