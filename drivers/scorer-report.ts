/**
 * The validator report: train both models on the train part of the logged outcomes, then on the
 * held-out batches compare plain K sampling (K candidates, all rerun) with oversampling 2K and
 * rerunning only the K (or the 1) the validator ranks best. Reruns saved vs Δ lost.
 */
import { join } from 'node:path';
import type { Cluster } from '../cluster/client.ts';
import { Rng } from '../cluster/rng.ts';
import type { EpisodeCache } from './episode-cache.ts';
import { ValidatorError } from '../policies/scorer/errors.ts';
import { DEFAULT_VALIDATOR_DIR, generateOutcomes, type OutcomeOptions, type OutcomeRow } from './scorer-dataset.ts';
import { auc, bootstrapCI, mean, spearman } from '../policies/scorer/metrics.ts';
import { ValueModel } from '../policies/scorer/model.ts';
import { rankOrder, scoreFeatures, type CandidateScore, type RankBy } from '../policies/scorer/rank.ts';
import { trainValueModels, type TrainOptions, type TrainResult } from '../policies/scorer/train.ts';

/** Candidates rerun by plain sampling. @default 4 */
export const DEFAULT_REPORT_K = 4;
/** Seeded draws of K / 2K candidates from each held-out pool. @default 16 */
export const DEFAULT_DRAWS = 16;

export interface ReportOptions {
  /** logged outcomes; when absent they are generated (needs cluster) or read from the cache */
  rows?: readonly OutcomeRow[];
  cluster?: Cluster;
  cache?: EpisodeCache | null;
  /** generation options (targets, envs, batches, …) when rows are not given */
  outcomes?: Omit<OutcomeOptions, 'cluster' | 'cache'>;
  /** models and dataset go here. @default '.hr1/validator' */
  outDir?: string;
  /** @default DEFAULT_REPORT_K (4) */
  k?: number;
  /** @default DEFAULT_DRAWS (16) */
  draws?: number;
  /** seeds training, the draws and the bootstrap. @default 0 */
  seed?: number;
  /** bootstrap resamples. @default 1000 */
  resamples?: number;
  train?: Omit<TrainOptions, 'rows' | 'outDir' | 'seed' | 'evalFeatures'>;
  onProgress?: OutcomeOptions['onProgress'];
}

export interface StrategyRow {
  name: string;
  /** candidates generated and rerun per batch */
  generated: number;
  reruns: number;
  /** reruns saved per batch against plain K */
  saved: number;
  bestDelta: number;
  bestCI: [number, number];
  meanDelta: number;
  meanCI: [number, number];
  /** best Δ of plain K − best Δ of this strategy (positive = lost), paired over batches */
  bestLost: number;
  bestLostCI: [number, number];
  /** share of rerun candidates with Δ < 0 */
  regressed: number;
}

export interface HeldoutMetrics {
  rows: number;
  batches: number;
  /** share of non-regressive (Δ ≥ 0) candidates */
  baseRate: number;
  validationAuc: number;
  /** 95% percentile bootstrap interval of validationAuc over held-out batches (NaN when a resample has one class only every time) */
  validationAucCI: [number, number];
  /** accuracy at P ≥ 0.5, and the majority-class accuracy it must beat */
  validationAccuracy: number;
  majorityAccuracy: number;
  rewardAuc: number;
  rewardAucCI: [number, number];
  rewardMse: number;
  /** MSE of predicting the train mean Δ for every candidate */
  constantMse: number;
  rewardSpearman: number;
  /** mean over held-out batches of the within-batch Spearman of Δ̂ vs Δ */
  withinBatchSpearman: number;
}

export interface ValidatorReport {
  table: string;
  strategies: StrategyRow[];
  heldout: HeldoutMetrics;
  models: { validation: string; reward: string; params: { validation: number; reward: number } };
  dataset: { train: number; heldout: number; cached: boolean | null; generateMs: number | null };
  trained: TrainResult;
  k: number;
}

type Cand = { delta: number; s: CandidateScore };

function groupKey(r: OutcomeRow): string {
  return `${r.target}|${r.env}|${r.batch}`;
}

/**
 * Train on the train part, evaluate on the held-out part.
 *
 * @example
 * const r = await validatorReport({ cluster: rt.cluster, cache: new EpisodeCache(':memory:') });
 * console.log(r.table);
 */
export async function validatorReport(o: ReportOptions): Promise<ValidatorReport> {
  const k = o.k ?? DEFAULT_REPORT_K;
  const draws = o.draws ?? DEFAULT_DRAWS;
  const seed = o.seed ?? 0;
  const outDir = o.outDir ?? DEFAULT_VALIDATOR_DIR;
  if (!Number.isInteger(k) || k < 1) throw new ValidatorError('VALIDATOR_BAD_OPTION', `report.k must be a positive integer, got ${String(k)}`, { field: 'k' });
  let rows = o.rows;
  let cached: boolean | null = null;
  let generateMs: number | null = null;
  if (!rows) {
    if (!o.cluster) throw new ValidatorError('VALIDATOR_BAD_OPTION', 'report needs rows or a cluster to generate them (init({inProcess: true}).cluster)', { field: 'cluster' });
    const g = await generateOutcomes({ ...o.outcomes, cluster: o.cluster, cache: o.cache ?? null, out: join(outDir, 'outcomes.jsonl'), ...(o.onProgress ? { onProgress: o.onProgress } : {}) });
    rows = g.rows;
    cached = g.cached;
    generateMs = g.ms;
  }
  const train = rows.filter((r) => r.part === 'train');
  const held = rows.filter((r) => r.part === 'heldout');
  if (train.length < 2 || held.length === 0) throw new ValidatorError('VALIDATOR_BAD_OPTION', `report needs train and held-out rows, got ${train.length} and ${held.length}; raise outcomes.trainBatches / heldoutBatches`, { field: 'rows' });
  const trained = await trainValueModels({ ...o.train, rows: train, outDir: join(outDir, 'models'), seed });
  const models = { validation: await ValueModel.fromPath(trained.validation.path), reward: await ValueModel.fromPath(trained.reward.path) };
  const scores = await scoreFeatures(models, held.map((r) => r.features));
  await models.validation.release();
  await models.reward.release();

  // held-out prediction quality
  const labels = held.map((r) => r.delta >= 0);
  const baseRate = mean(labels.map((l) => (l ? 1 : 0)));
  const trainMean = mean(train.map((r) => r.delta));
  const groups = new Map<string, Cand[]>();
  held.forEach((r, i) => {
    const g = groups.get(groupKey(r)) ?? [];
    g.push({ delta: r.delta, s: scores[i]! });
    groups.set(groupKey(r), g);
  });
  // AUC intervals: resample held-out batches (a batch's candidates share a packet), pool, score
  const byBatch = new Map<string, number[]>();
  held.forEach((r, i) => {
    const k = groupKey(r);
    if (!byBatch.has(k)) byBatch.set(k, []);
    byBatch.get(k)!.push(i);
  });
  const aucCI = (score: (i: number) => number, tag: string): [number, number] => {
    const bs = [...byBatch.keys()].sort();
    const rng = new Rng(`report|${seed}|auc|${tag}`);
    const vals: number[] = [];
    for (let j = 0; j < (o.resamples ?? 1000); j++) {
      const idx = bs.flatMap(() => byBatch.get(bs[rng.int(bs.length)]!)!);
      const ls = idx.map((i) => labels[i]!);
      if (ls.every((l) => l) || ls.every((l) => !l)) continue;
      vals.push(auc(idx.map(score), ls));
    }
    vals.sort((a, b) => a - b);
    return vals.length ? [vals[Math.floor(0.025 * (vals.length - 1))]!, vals[Math.ceil(0.975 * (vals.length - 1))]!] : [Number.NaN, Number.NaN];
  };
  const within = [...groups.values()].map((g) => spearman(g.map((c) => c.s.delta), g.map((c) => c.delta))).filter((x) => !Number.isNaN(x));
  const heldout: HeldoutMetrics = {
    rows: held.length,
    batches: groups.size,
    baseRate,
    validationAuc: auc(scores.map((s) => s.nonRegressive), labels),
    validationAucCI: aucCI((i) => scores[i]!.nonRegressive, 'validation'),
    validationAccuracy: mean(scores.map((s, i) => ((s.nonRegressive >= 0.5) === labels[i] ? 1 : 0))),
    majorityAccuracy: Math.max(baseRate, 1 - baseRate),
    rewardAuc: auc(scores.map((s) => s.delta), labels),
    rewardAucCI: aucCI((i) => scores[i]!.delta, 'reward'),
    rewardMse: mean(held.map((r, i) => (scores[i]!.delta - r.delta) ** 2)),
    constantMse: mean(held.map((r) => (trainMean - r.delta) ** 2)),
    rewardSpearman: spearman(scores.map((s) => s.delta), held.map((r) => r.delta)),
    withinBatchSpearman: mean(within),
  };

  // strategies, per batch averaged over seeded draws, then bootstrapped over batches
  const strategies: { name: string; generated: number; reruns: number; pick: (plain: Cand[], over: Cand[]) => Cand[] }[] = [
    { name: `plain K (K=${k}, all rerun)`, generated: k, reruns: k, pick: (p) => p },
    { name: `oversample 2K, all rerun`, generated: 2 * k, reruns: 2 * k, pick: (_p, ov) => ov },
    { name: `oversample 2K → top K by Δ̂`, generated: 2 * k, reruns: k, pick: (_p, ov) => top(ov, k, 'reward') },
    { name: `oversample 2K → top K by P(Δ≥0)`, generated: 2 * k, reruns: k, pick: (_p, ov) => top(ov, k, 'validation') },
    { name: `oversample 2K → top 1 by Δ̂`, generated: 2 * k, reruns: 1, pick: (_p, ov) => top(ov, 1, 'reward') },
    { name: `plain K → top 1 by Δ̂`, generated: k, reruns: 1, pick: (p) => top(p, 1, 'reward') },
    { name: `plain K → 1 at random (control)`, generated: k, reruns: 1, pick: (p) => p.slice(0, 1) },
  ];
  const per = strategies.map(() => ({ best: [] as number[], mean: [] as number[], reg: [] as number[] }));
  const keys = [...groups.keys()].sort();
  let used = 0;
  for (const key of keys) {
    const pool = groups.get(key)!;
    if (pool.length < 2 * k) continue;
    used++;
    const acc = strategies.map(() => ({ best: 0, mean: 0, reg: 0 }));
    for (let d = 0; d < draws; d++) {
      const perm = new Rng(`report|${seed}|${key}|${d}`).shuffle(pool);
      const plain = perm.slice(0, k);
      const over = perm.slice(0, 2 * k);
      strategies.forEach((st, i) => {
        const kept = st.pick(plain, over);
        acc[i]!.best += Math.max(...kept.map((c) => c.delta)) / draws;
        acc[i]!.mean += mean(kept.map((c) => c.delta)) / draws;
        acc[i]!.reg += mean(kept.map((c) => (c.delta < 0 ? 1 : 0))) / draws;
      });
    }
    acc.forEach((a, i) => {
      per[i]!.best.push(a.best);
      per[i]!.mean.push(a.mean);
      per[i]!.reg.push(a.reg);
    });
  }
  if (used === 0) throw new ValidatorError('VALIDATOR_BAD_OPTION', `no held-out batch has 2K = ${2 * k} candidates; lower report.k or raise outcomes.walks`, { field: 'k' });
  const resamples = o.resamples ?? 1000;
  const plainBest = per[0]!.best;
  const out: StrategyRow[] = strategies.map((st, i) => {
    const lost = plainBest.map((b, j) => b - per[i]!.best[j]!);
    return {
      name: st.name,
      generated: st.generated,
      reruns: st.reruns,
      saved: k - st.reruns,
      bestDelta: mean(per[i]!.best),
      bestCI: bootstrapCI(per[i]!.best, { seed: `${seed}|best|${i}`, resamples }),
      meanDelta: mean(per[i]!.mean),
      meanCI: bootstrapCI(per[i]!.mean, { seed: `${seed}|mean|${i}`, resamples }),
      bestLost: mean(lost),
      bestLostCI: bootstrapCI(lost, { seed: `${seed}|lost|${i}`, resamples }),
      regressed: mean(per[i]!.reg),
    };
  });
  return {
    table: formatTable(out, heldout, used),
    strategies: out,
    heldout,
    models: { validation: trained.validation.path, reward: trained.reward.path, params: { validation: trained.validation.params, reward: trained.reward.params } },
    dataset: { train: train.length, heldout: held.length, cached, generateMs },
    trained,
    k,
  };
}

function top(cands: readonly Cand[], n: number, by: RankBy): Cand[] {
  return rankOrder(cands.map((c) => c.s), by).slice(0, n).map((i) => cands[i]!);
}

const f3 = (x: number): string => (Number.isNaN(x) ? 'n/a' : `${x >= 0 ? '+' : ''}${x.toFixed(3)}`);
const ci = (c: [number, number]): string => `[${f3(c[0])}, ${f3(c[1])}]`;

/** The markdown table of a report. */
export function formatTable(rows: readonly StrategyRow[], h: HeldoutMetrics, batches: number): string {
  const lines = [
    `| strategy | generated | reruns | saved vs plain K | best Δ found [95% CI] | Δ lost vs plain K (best) [95% CI] | mean Δ of rerun [95% CI] | regressed |`,
    `|---|---|---|---|---|---|---|---|`,
    ...rows.map((r) => `| ${r.name} | ${r.generated} | ${r.reruns} | ${r.saved} | ${f3(r.bestDelta)} ${ci(r.bestCI)} | ${f3(r.bestLost)} ${ci(r.bestLostCI)} | ${f3(r.meanDelta)} ${ci(r.meanCI)} | ${(100 * r.regressed).toFixed(1)}% |`),
    '',
    `held-out: ${h.rows} candidates in ${h.batches} batches (${batches} with a full 2K pool); non-regressive base rate ${(100 * h.baseRate).toFixed(1)}%`,
    `validation model: AUC ${h.validationAuc.toFixed(3)} [${h.validationAucCI.map((x) => x.toFixed(3)).join(', ')}] (chance 0.5), accuracy ${(100 * h.validationAccuracy).toFixed(1)}% (majority ${(100 * h.majorityAccuracy).toFixed(1)}%)`,
    `reward model: MSE ${h.rewardMse.toFixed(4)} (constant ${h.constantMse.toFixed(4)}), Spearman ${h.rewardSpearman.toFixed(3)}, within-batch Spearman ${h.withinBatchSpearman.toFixed(3)}, AUC of Δ̂ for Δ≥0 ${h.rewardAuc.toFixed(3)} [${h.rewardAucCI.map((x) => x.toFixed(3)).join(', ')}]`,
  ];
  return lines.join('\n');
}
