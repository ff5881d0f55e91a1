import test from 'ava';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EpisodeCache } from '../../../drivers/index.ts';
import { init, type Runtime } from '../../../cluster/init.ts';
import { auc, spearman, trainValueModels, ValueModel } from '../../../policies/scorer/index.ts';
import { generateOutcomes, type OutcomeRow } from '../../../drivers/index.ts';

// one tiny dataset for the file: 1 target, 2 envs, 4 train + 2 held-out batches of 8 episodes
const OPTS = { targets: ['sim/llama-3b'], envs: ['alfworld', 'dbbench'], trainBatches: 4, heldoutBatches: 3, size: 8, teacherK: 4, walks: 8, seed: 0 };
// measured on this dataset (deterministic), with the patch grammar's candidates (FEATURE_VERSION 4,
// weight decay 1e-2, the reward model fitted to standardised Δ): AUC 0.809, Spearman 0.547, MSE
// 0.0696 vs constant 0.0538 (raw Δ: 0.783, 0.504, 0.0522; version 3: 0.695, 0.390, 0.0821 vs
// 0.0788). The reward model ranks (what rankCandidates uses) but is not calibrated on 96 rows, so
// calibration is logged, not asserted (docs/VALIDATOR.md).
const THRESHOLD = { auc: 0.6, spearman: 0.25 };
const dir = mkdtempSync(join(tmpdir(), 'hr1-validator-'));
let rt: Runtime;
let rows: OutcomeRow[];

test.before(async () => {
  rt = await init({ inProcess: true });
  rows = (await generateOutcomes({ ...OPTS, cluster: rt.cluster, cache: new EpisodeCache(':memory:'), out: join(dir, 'outcomes.jsonl') })).rows;
});

test.after.always(async () => {
  await rt?.shutdown();
  rmSync(dir, { recursive: true, force: true });
});

test('outcomes - the same options give the same rows, and the cache file is read back', async (t) => {
  t.true(rows.length > 100);
  // a fresh cache and cluster regenerate the same bytes
  const again = await generateOutcomes({ ...OPTS, envs: ['alfworld'], trainBatches: 1, heldoutBatches: 0, cluster: rt.cluster, cache: new EpisodeCache(':memory:') });
  t.true(again.rows.length > 0);
  t.deepEqual(again.rows, rows.filter((r) => r.part === 'train' && r.env === 'alfworld' && r.batch === 0));
  const read = await generateOutcomes({ ...OPTS, cluster: rt.cluster, cache: null, out: join(dir, 'outcomes.jsonl') });
  t.true(read.cached);
  t.deepEqual(read.rows, rows);
  t.is(readFileSync(join(dir, 'outcomes.jsonl'), 'utf8').split('\n').filter(Boolean).length, rows.length);
});

test('train - same rows and seed give the same models; ORT matches torch', async (t) => {
  const train = rows.filter((r) => r.part === 'train');
  const held = rows.filter((r) => r.part === 'heldout');
  const evalFeatures = held.map((r) => r.features);
  const [a, b, c] = await Promise.all([
    trainValueModels({ rows: train, outDir: join(dir, 'a'), seed: 3, evalFeatures, epochs: 200 }),
    trainValueModels({ rows: train, outDir: join(dir, 'b'), seed: 3, evalFeatures, epochs: 200 }),
    trainValueModels({ rows: train, outDir: join(dir, 'c'), seed: 4, evalFeatures, epochs: 200 }),
  ]);
  t.deepEqual(a.eval, b.eval);
  t.deepEqual(readFileSync(a.reward.path), readFileSync(b.reward.path));
  t.notDeepEqual(a.eval.reward, c.eval.reward);
  for (const name of ['validation', 'reward'] as const) {
    const m = await ValueModel.fromPath(a[name].path);
    const ort = await m.predict(evalFeatures);
    await m.release();
    const worst = Math.max(...ort.map((x, i) => Math.abs(x - a.eval[name][i]!)));
    t.true(worst < 1e-5, `${name}: ORT vs torch max |diff| ${worst}`);
  }
});

test('validator - ranks held-out candidates better than a constant predictor', async (t) => {
  const train = rows.filter((r) => r.part === 'train');
  const held = rows.filter((r) => r.part === 'heldout');
  const r = await trainValueModels({ rows: train, outDir: join(dir, 'h'), seed: 0, evalFeatures: held.map((x) => x.features) });
  // regressions are rare on SIMULATED targets (a few %), so P(Δ ≥ 0) has almost no negatives to
  // rank here; the check is on Δ̂: it must tell improving candidates (Δ > 0) apart and beat the
  // constant predictor (the train mean) in MSE. Thresholds: measured first (docs/VALIDATOR.md).
  const improves = held.map((x) => x.delta > 0);
  const a = auc(r.eval.reward, improves);
  const m = train.reduce((s, x) => s + x.delta, 0) / train.length;
  const constMse = held.reduce((s, x) => s + (x.delta - m) ** 2, 0) / held.length;
  const mse = held.reduce((s, x, i) => s + (x.delta - r.eval.reward[i]!) ** 2, 0) / held.length;
  const rho = spearman(r.eval.reward, held.map((x) => x.delta));
  t.log(`held-out ${held.length} (improving ${improves.filter(Boolean).length}); AUC of Δ̂ for Δ>0 ${a.toFixed(3)}, Spearman ${rho.toFixed(3)}, MSE ${mse.toFixed(4)} vs constant ${constMse.toFixed(4)}; validation AUC ${auc(r.eval.validation, held.map((x) => x.delta >= 0)).toFixed(3)}`);
  t.true(a > THRESHOLD.auc, `AUC of Δ̂ for Δ > 0: ${a}`);
  t.true(rho > THRESHOLD.spearman, `Spearman of Δ̂ and Δ: ${rho}`);
});

test('report - plain K against oversampling on held-out batches, with AUC intervals over batches', async (t) => {
  const { validatorReport } = await import('../../../drivers/index.ts');
  const r = await validatorReport({ rows, outDir: join(dir, 'report'), k: 2, draws: 4, resamples: 200, seed: 0 });
  t.is(r.strategies.length, 7);
  const plain = r.strategies[0]!;
  t.is(plain.bestLost, 0, 'plain K against itself loses nothing');
  // 2K all rerun is a superset of plain K's draw: it never finds less
  t.true(r.strategies[1]!.bestLost <= 0);
  for (const [v, [lo, hi]] of [[r.heldout.validationAuc, r.heldout.validationAucCI], [r.heldout.rewardAuc, r.heldout.rewardAucCI]] as const) {
    t.true(lo <= v + 1e-9 && v <= hi + 1e-9 && lo >= 0 && hi <= 1, `${v} in [${lo}, ${hi}]`);
  }
  t.regex(r.table, /validation model: AUC \d\.\d{3} \[\d\.\d{3}, \d\.\d{3}\] \(chance 0\.5\)/);
});

test('outcomes - a learned target plays only the env it was trained on; no playable pair is a typed error', async (t) => {
  const o = { targets: ['lm/alf-xs-192-a@tiny', 'sim/llama-3b'], envs: ['alfworld', 'dbbench'], trainBatches: 1, heldoutBatches: 0, size: 2, teacherK: 1, walks: 1, seed: 0 };
  const { rows: got } = await generateOutcomes({ ...o, cluster: rt.cluster, cache: new EpisodeCache(':memory:') });
  t.deepEqual([...new Set(got.map((x) => `${x.target} ${x.env}`))].sort(), ['lm/alf-xs-192-a@tiny alfworld', 'sim/llama-3b alfworld', 'sim/llama-3b dbbench']);
  await t.throwsAsync(generateOutcomes({ ...o, targets: ['lm/alf-xs-192-a@tiny'], envs: ['dbbench'], cluster: rt.cluster, cache: null }), { message: /no target plays any of dbbench \(a learned target plays only its own env: lm\/alf-xs-192-a@tiny alfworld\)/ });
});

test('outcomes - held-out reward and split overrides: rows name their split, the key changes, a bad split is a typed error', async (t) => {
  const { outcomesKey } = await import('../../../drivers/scorer-dataset.ts');
  const o = { targets: ['sim/llama-3b'], envs: ['alfworld'], trainBatches: 1, heldoutBatches: 0, size: 4, teacherK: 1, walks: 2, seed: 0 };
  const ho = { ...o, reward: 'heldout' as const, heldoutTasks: 4, splits: { alfworld: { train: 'seen_dev' } } };
  t.not(outcomesKey({ ...o, cluster: rt.cluster, cache: null }), outcomesKey({ ...ho, cluster: rt.cluster, cache: null }));
  t.is(outcomesKey({ ...o, cluster: rt.cluster, cache: null }), outcomesKey({ ...o, reward: 'batch', splits: {}, cluster: rt.cluster, cache: null }), 'the defaults keep the key');
  const { rows: got } = await generateOutcomes({ ...ho, cluster: rt.cluster, cache: new EpisodeCache(':memory:') });
  t.true(got.length >= 2);
  t.true(got.every((x) => x.split === 'seen_dev'));
  await t.throwsAsync(generateOutcomes({ ...ho, splits: { alfworld: { train: 'nope' } }, cluster: rt.cluster, cache: null }), { message: /outcomes\.splits\.alfworld\.train: alfworld has no split "nope"; choose one of/ });
});
