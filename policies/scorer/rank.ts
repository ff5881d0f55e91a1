/**
 * Ranking candidates of one packet with the two models: P(non-regressive) and Δ̂.
 */
import type { Packet } from '../engineer/index.ts';
import { candidateFeatures } from './features.ts';
import type { ValueModel } from './model.ts';

export interface ValidatorModels {
  /** P(Δ ≥ 0) */
  validation: ValueModel;
  /** Δ̂ */
  reward: ValueModel;
}

/** What ranks: the reward model's Δ̂, or the validation model's P(Δ ≥ 0). @default 'reward' */
export type RankBy = 'reward' | 'validation';
export const DEFAULT_RANK_BY: RankBy = 'reward';

export interface CandidateScore {
  /** P(Δ ≥ 0) */
  nonRegressive: number;
  /** Δ̂ */
  delta: number;
}

/** Scores of feature rows under both models. */
export async function scoreFeatures(m: ValidatorModels, rows: readonly (readonly number[])[]): Promise<CandidateScore[]> {
  const [p, d] = await Promise.all([m.validation.predict(rows), m.reward.predict(rows)]);
  return p.map((x, i) => ({ nonRegressive: x, delta: d[i]! }));
}

/**
 * Indices of `scores` best first: by the chosen model, ties by the other, then by index (stable).
 */
export function rankOrder(scores: readonly CandidateScore[], by: RankBy = DEFAULT_RANK_BY): number[] {
  const key = (s: CandidateScore): [number, number] => (by === 'reward' ? [s.delta, s.nonRegressive] : [s.nonRegressive, s.delta]);
  return scores
    .map((s, i) => i)
    .sort((a, b) => {
      const [a1, a2] = key(scores[a]!);
      const [b1, b2] = key(scores[b]!);
      return b1 - a1 || b2 - a2 || a - b;
    });
}

/**
 * Score and rank the candidate patches of one packet.
 *
 * @example
 * const { order } = await rankCandidates(models, packet, proposals.map((p) => p.patch));
 * const keep = order.slice(0, k);
 */
export async function rankCandidates(m: ValidatorModels, packet: Packet, candidates: readonly unknown[], by: RankBy = DEFAULT_RANK_BY): Promise<{ scores: CandidateScore[]; order: number[] }> {
  const scores = await scoreFeatures(m, candidates.map((c) => candidateFeatures(packet, c)));
  return { scores, order: rankOrder(scores, by) };
}
