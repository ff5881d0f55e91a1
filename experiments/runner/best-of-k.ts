/**
 * Best-of-K, shared by the editor methods (`prompted-editor` with `select: best-of-k`, and
 * `llm-editor`): each candidate is rerun on the packet's own train batch (paired with its vanilla
 * records, so never a test episode) and the one with the largest Δ is kept (ties: the earlier
 * one). Also {@link MethodProposal}: what a method returns when its row should record more than a patch.
 */
import { rewardOf, type RewardOptions, type RewardResult } from '../../drivers/index.ts';
import type { MethodContext } from './methods.ts';

/** Δ of each candidate on the packet's own batch (success, or `metric`), and the index of the best valid one (null: none is valid). */
export async function scoreOnOwnBatch(ctx: MethodContext, patches: readonly unknown[], o: { metric?: RewardOptions['metric'] } = {}): Promise<{ best: number | null; results: RewardResult[] }> {
  const results: RewardResult[] = [];
  let best: number | null = null;
  let bestDelta = -Infinity;
  for (const [i, patch] of patches.entries()) {
    const r = await rewardOf(ctx.cluster, { env: ctx.env, target: ctx.target, episodes: ctx.trainEpisodes, patch, cache: ctx.cache, base: ctx.trainRecords, envOptions: ctx.envOptions, ...(ctx.targetOptions ? { targetOptions: ctx.targetOptions } : {}) }, o.metric ? { metric: o.metric } : {});
    results.push(r);
    if (r.valid && r.delta > bestDelta) {
      bestDelta = r.delta;
      best = i;
    }
  }
  return { best, results };
}

/** One candidate of a best-of-K method as its row records it. */
export interface CandidateRecord {
  /** the sampling seed it was asked with */
  seed: number;
  /** chat calls it took (2: asked again after an invalid reply) */
  attempts: number;
  valid: boolean;
  /** Δ on the packet's own batch (null: invalid, not scored) */
  delta: number | null;
  /** the canonical patch hash ('' when it did not parse) */
  hash: string;
  /** the validator's issues, `CODE at path: message` (invalid candidates; and `first:` ones of a repaired reply) */
  issues?: string[];
}

/** The candidates of one unit: counts, and each candidate. */
export interface CandidatesRecord {
  k: number;
  valid: number;
  invalid: number;
  /** candidates whose first reply was invalid and were asked again */
  retried: number;
  /** of those, the ones whose second reply was valid */
  repaired: number;
  /** index of the kept candidate (null: none was valid; the row is then invalid) */
  chosen: number | null;
  list: CandidateRecord[];
}

/**
 * What `Method.propose` may return instead of a bare patch: the patch, why the method has no valid
 * patch (`invalid`: the row is marked invalid and its episodes run unpatched, as for an invalid
 * patch), and its candidates, recorded with the row.
 */
export class MethodProposal {
  constructor(
    readonly patch: unknown | null,
    readonly info: { invalid?: string; candidates?: CandidatesRecord } = {},
  ) {}
}
