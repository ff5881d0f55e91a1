/**
 * GRPO math as pure functions on arrays: the reference for learner/grpo.py (verl
 * semantics, see docs/LEARNER.md). A cross-check test runs both on the same inputs.
 */

/** Added to the group std before dividing. @default 1e-6 */
export const ADV_EPS = 1e-6;
/** `logp − logp_old` is clamped to ±this before exp. @default 20 */
export const RATIO_CLAMP = 20;
/** The k3 KL estimate is clamped to ±this per token. @default 10 */
export const KL_CLAMP = 10;
/** @default 0.2 */
export const DEFAULT_EPS_LOW = 0.2;
/** @default 0.2 */
export const DEFAULT_EPS_HIGH = 0.2;
/** Dual-clip constant for negative advantages. @default 3 */
export const DEFAULT_CLIP_C = 3;

/**
 * Group-normalised advantages: A_i = (r_i − mean_g) / (max(std_g, stdFloor) + 1e-6) with the unbiased std.
 * A group of one or of equal rewards gives 0 (verl gives a singleton r/(1+eps); DESIGN.md asks 0).
 *
 * @example
 * groupAdvantages([1, 0], ['a', 'a']); // [0.7071…, −0.7071…]
 */
export function groupAdvantages(rewards: readonly number[], groupIds: readonly (string | number)[], stdFloor = 0): number[] {
  if (rewards.length !== groupIds.length) throw new RangeError(`groupAdvantages: ${rewards.length} rewards but ${groupIds.length} group ids`);
  const groups = new Map<string | number, number[]>();
  groupIds.forEach((g, i) => {
    const xs = groups.get(g);
    if (xs) xs.push(i);
    else groups.set(g, [i]);
  });
  const adv = new Array<number>(rewards.length).fill(0);
  for (const idx of groups.values()) {
    if (idx.length < 2) continue;
    const r = idx.map((i) => rewards[i]!);
    if (r.every((x) => x === r[0])) continue;
    const mean = r.reduce((a, b) => a + b, 0) / r.length;
    const variance = r.reduce((a, x) => a + (x - mean) ** 2, 0) / (r.length - 1);
    const std = Math.max(Math.sqrt(variance), stdFloor);
    idx.forEach((i, k) => (adv[i] = (r[k]! - mean) / (std + ADV_EPS)));
  }
  return adv;
}

/** exp(clamp(logp − logpOld, −20, 20)). */
export function ratio(logp: number, logpOld: number): number {
  return Math.exp(Math.min(RATIO_CLAMP, Math.max(-RATIO_CLAMP, logp - logpOld)));
}

export interface ClipOptions {
  /** @default 0.2 */
  epsLow?: number;
  /** @default 0.2 */
  epsHigh?: number;
  /** @default 3 */
  clipC?: number;
}

export interface TokenLoss {
  loss: number;
  ratio: number;
  /** the ε-clipped term was the larger one */
  clipped: boolean;
  /** A < 0 and the dual clip −A·c bounded the loss */
  dualClipped: boolean;
}

/**
 * One token's loss: max(−A·ρ, −A·clip(ρ, 1−ε_low, 1+ε_high)); for A < 0 additionally
 * min(that, −A·c).
 */
export function tokenLoss(logp: number, logpOld: number, adv: number, o: ClipOptions = {}): TokenLoss {
  const epsLow = o.epsLow ?? DEFAULT_EPS_LOW;
  const epsHigh = o.epsHigh ?? DEFAULT_EPS_HIGH;
  const c = o.clipC ?? DEFAULT_CLIP_C;
  const r = ratio(logp, logpOld);
  const l1 = -adv * r;
  const l2 = -adv * Math.min(1 + epsHigh, Math.max(1 - epsLow, r));
  const clip1 = Math.max(l1, l2);
  const l3 = -adv * c;
  const loss = adv < 0 ? Math.min(l3, clip1) : clip1;
  return { loss, ratio: r, clipped: l2 > l1, dualClipped: adv < 0 && clip1 > l3 };
}

/** k3 estimator of KL(π‖ref) for one token: exp(ref − logp) − (ref − logp) − 1, clamped to ±10. */
export function k3(logp: number, refLogp: number): number {
  const d = refLogp - logp;
  return Math.min(KL_CLAMP, Math.max(-KL_CLAMP, Math.exp(d) - d - 1));
}

/** Mean over every valid token of the whole batch (rows of uneven length): Σ_i Σ_t x / Σ_i T_i. */
export function tokenMean(rows: readonly (readonly number[])[]): number {
  let s = 0;
  let n = 0;
  for (const row of rows) for (const x of row) (s += x), n++;
  return n === 0 ? 0 : s / n;
}

export interface GrpoInput extends ClipOptions {
  /** per sample, per completion token: log-prob under the policy being updated */
  logprobs: readonly (readonly number[])[];
  /** per sample, per token: log-prob under the policy that sampled it */
  oldLogprobs: readonly (readonly number[])[];
  rewards: readonly number[];
  groupIds: readonly (string | number)[];
  /** per sample, per token: log-prob under the reference; KL is computed only when given */
  refLogprobs?: readonly (readonly number[])[];
  /** @default 0 */
  klCoef?: number;
  /** advantages divide by max(group std, stdFloor). @default 0 */
  stdFloor?: number;
}

export interface GrpoOutput {
  advantages: number[];
  ratio: number[][];
  perTokenLoss: number[][];
  /** token-mean of the per-token loss */
  pgLoss: number;
  clipFrac: number;
  dualClipFrac: number;
  /** token-mean k3 KL (0 without a reference) */
  kl: number;
  /** pgLoss + klCoef·kl */
  loss: number;
}

/** The whole GRPO objective for one batch, as grpo.py computes it. */
export function grpoLoss(inp: GrpoInput): GrpoOutput {
  const n = inp.logprobs.length;
  if (inp.oldLogprobs.length !== n || inp.rewards.length !== n || inp.groupIds.length !== n) throw new RangeError('grpoLoss: logprobs, oldLogprobs, rewards and groupIds need one entry per sample');
  inp.logprobs.forEach((row, i) => {
    if (inp.oldLogprobs[i]!.length !== row.length) throw new RangeError(`grpoLoss: sample ${i} has ${row.length} logprobs but ${inp.oldLogprobs[i]!.length} old logprobs`);
    if (inp.refLogprobs && inp.refLogprobs[i]?.length !== row.length) throw new RangeError(`grpoLoss: sample ${i} has ${row.length} logprobs but ${inp.refLogprobs[i]?.length ?? 0} ref logprobs`);
  });
  const advantages = groupAdvantages(inp.rewards, inp.groupIds, inp.stdFloor ?? 0);
  const toks = inp.logprobs.map((row, i) => row.map((lp, t) => tokenLoss(lp, inp.oldLogprobs[i]![t]!, advantages[i]!, inp)));
  const pgLoss = tokenMean(toks.map((r) => r.map((x) => x.loss)));
  const ref = inp.refLogprobs;
  const kl = ref ? tokenMean(inp.logprobs.map((row, i) => row.map((lp, t) => k3(lp, ref[i]![t]!)))) : 0;
  return {
    advantages,
    ratio: toks.map((r) => r.map((x) => x.ratio)),
    perTokenLoss: toks.map((r) => r.map((x) => x.loss)),
    pgLoss,
    clipFrac: tokenMean(toks.map((r) => r.map((x) => (x.clipped ? 1 : 0)))),
    dualClipFrac: tokenMean(toks.map((r) => r.map((x) => (x.dualClipped ? 1 : 0)))),
    kl,
    loss: pgLoss + (inp.klCoef ?? 0) * kl,
  };
}
