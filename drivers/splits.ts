/**
 * Disjoint splits: the (task, episode seed) pairs an engineer is trained on (SFT batches and
 * their verification seeds, GRPO batches), the packet batches an evaluation reads and the test
 * episodes it scores must never share a pair. Each purpose draws its episode seeds from its own
 * range (SEED_SPACES), and {@link assertDisjoint} refuses any overlap that is left (a user's seed,
 * an engineer trained elsewhere), naming both sets and the pairs.
 */
import { Hr1Error } from '../cluster/errors.ts';
import type { EpisodeRef } from '../actors/target.ts';

/**
 * Where each purpose's episode seeds start. SFT batch i: `seed + i` (its verification j adds
 * VERIFY_SEED_STRIDE × j, below 800,000 for j ≤ 7); GRPO iteration t: `grpo + 1000 × seed + t`;
 * held-out reward batches (train config `reward.on: heldout`): SFT batch b's verification j
 * `heldout + 10,000 × seed + 8 × b + j`, GRPO iteration t's `heldout + 50,000 + 1000 × seed + t`;
 * evaluation packet batch i: `packets + seed + i`; crosstask's failures under packet seed s:
 * `crosstask + s`; test episodes use the seeds the experiment names.
 */
export const SEED_SPACES = { sft: 0, heldout: 700_000, grpo: 800_000, packets: 900_000, crosstask: 950_000 } as const;

/** One named set of episodes of one env (e.g. `sft`, `grpo`, `packets`, `test`). */
export interface EpisodeSet {
  name: string;
  env: string;
  episodes: readonly EpisodeRef[];
}

export interface SplitOverlap {
  env: string;
  a: string;
  b: string;
  /** how many (task, seed) pairs the two share */
  count: number;
  /** the first few, in the order of `a` */
  examples: EpisodeRef[];
}

/** Two sets of episodes share a (task, seed): training and evaluation would not be apart. */
export class SplitOverlapError extends Hr1Error<'SPLIT_OVERLAP'> {
  readonly overlaps: SplitOverlap[];
  constructor(overlaps: SplitOverlap[]) {
    const o = overlaps[0]!;
    const ex = o.examples.map((e) => `${e.taskId} seed ${e.seed}`).join('; ');
    super(
      'SPLIT_OVERLAP',
      `${o.env}: the ${o.a} and ${o.b} episodes share ${o.count} (task, seed) pair${o.count === 1 ? '' : 's'} (${ex})${overlaps.length > 1 ? `, and ${overlaps.length - 1} more pair${overlaps.length > 2 ? 's' : ''} of sets overlap` : ''}; ` +
        'an engineer must not be trained on the episodes it is evaluated on: use another --seed for the experiment, or an engineer trained with its own seeds (hr1 train records them in splits.json)',
      { data: { overlaps } },
    );
    this.overlaps = overlaps;
  }
}

const pairKey = (e: EpisodeRef) => `${e.taskId}\u0000${e.seed}`;

/** Every pair of sets of the same env that share a (task, seed), with the shared count. */
export function findOverlaps(sets: readonly EpisodeSet[]): SplitOverlap[] {
  const out: SplitOverlap[] = [];
  const keys = sets.map((s) => new Set(s.episodes.map(pairKey)));
  for (let i = 0; i < sets.length; i++) {
    for (let j = i + 1; j < sets.length; j++) {
      if (sets[i]!.env !== sets[j]!.env) continue;
      const shared = sets[i]!.episodes.filter((e) => keys[j]!.has(pairKey(e)));
      const uniq = [...new Map(shared.map((e) => [pairKey(e), e])).values()];
      if (uniq.length) out.push({ env: sets[i]!.env, a: sets[i]!.name, b: sets[j]!.name, count: uniq.length, examples: uniq.slice(0, 3) });
    }
  }
  return out;
}

/** Throw {@link SplitOverlapError} when any two sets of one env share a (task, seed). */
export function assertDisjoint(sets: readonly EpisodeSet[]): void {
  const o = findOverlaps(sets);
  if (o.length) throw new SplitOverlapError(o);
}

/** A compact record of a set for run.json: its size and a hash of its sorted pairs. */
export function describeSet(s: EpisodeSet): { name: string; env: string; episodes: number; tasks: number; seeds: [number, number] | null } {
  const seeds = s.episodes.map((e) => e.seed);
  return { name: s.name, env: s.env, episodes: s.episodes.length, tasks: new Set(s.episodes.map((e) => e.taskId)).size, seeds: seeds.length ? [Math.min(...seeds), Math.max(...seeds)] : null };
}
