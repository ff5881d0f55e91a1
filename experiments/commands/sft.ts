/** `hr1 sft build`: the cold-start SFT dataset as JSONL. */
import { withCluster, type ClusterCliOptions } from './runtime.ts';
import { checkTarget } from './targets.ts';

export interface SftBuildOptions extends Partial<ClusterCliOptions> {
  env: string;
  target: string;
  /** @default the env's training split */
  split?: string | undefined;
  batches: number;
  size: number;
  k: number;
  minDelta: number;
  seed: number;
  out: string;
}

/** In-process without --address (as before the cluster options existed). */
export async function sftBuild(o: SftBuildOptions): Promise<void> {
  checkTarget(o.target);
  const { makeBatches, buildSftDataset, formatSftSummary } = await import('../../drivers/index.ts');
  const { envDescriptor } = await import('../../envs/registry.ts');
  const batches = makeBatches(o.env, { count: o.batches, size: o.size, split: o.split ?? envDescriptor(o.env).splits.train, seed: o.seed });
  await withCluster(
    o,
    async (rt) => {
      const r = await buildSftDataset({ cluster: rt.cluster, env: o.env, target: o.target, batches, k: o.k, minDelta: o.minDelta, teacherSeed: o.seed, out: o.out });
      console.log(formatSftSummary(r.summary));
    },
    { defaultInProcess: true },
  );
}
