import test from 'ava';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EpisodeCache } from '../../../drivers/index.ts';
import { Scorer } from '../../../actors/scorer.ts';
import { init } from '../../../cluster/init.ts';
import { Hr1Error } from '../../../cluster/errors.ts';
import { baseRecords, makeBatches } from '../../../drivers/index.ts';
import { extractPacket } from '../../../policies/engineer/index.ts';
import { candidatePool, generateOutcomes } from '../../../drivers/index.ts';
import { candidateFeatures, rankOrder, trainValueModels, ValueModel, ValidatorModelMissingError } from '../../../policies/scorer/index.ts';

test('Scorer actor - loads models from the object store and ranks candidates as the models do', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'hr1-validator-actor-'));
  const rt = await init({ inProcess: true });
  try {
    const cache = new EpisodeCache(':memory:');
    const { rows } = await generateOutcomes({ cluster: rt.cluster, cache, targets: ['sim/llama-3b'], envs: ['alfworld'], trainBatches: 2, heldoutBatches: 0, size: 6, walks: 6 });
    const trained = await trainValueModels({ rows, outDir: dir, seed: 0, epochs: 100 });
    await rt.cluster.objects.put('validator/validation.onnx', readFileSync(trained.validation.path));
    await rt.cluster.objects.put('validator/reward.onnx', readFileSync(trained.reward.path));
    const v = await rt.cluster.spawn(Scorer, { models: { validation: { object: 'validator/validation.onnx' }, reward: { object: 'validator/reward.onnx' } } });
    const [episodes] = makeBatches('alfworld', { count: 1, size: 6, split: 'valid_seen', seed: 77 });
    const packet = extractPacket(await baseRecords(rt.cluster, { env: 'alfworld', target: 'sim/llama-3b', episodes: episodes!, cache }));
    const candidates = candidatePool(packet, { teacherK: 3, walks: 5, seed: 1 }).map((c) => c.patch);
    const out = await v.rank({ packet, candidates });
    t.is(out.scores.length, candidates.length);
    t.deepEqual([...out.order].sort((a, b) => a - b), candidates.map((_, i) => i));
    // the same numbers as the ONNX files in this process
    const m = await ValueModel.fromPath(trained.reward.path);
    const direct = await m.predict(candidates.map((c) => candidateFeatures(packet, c)));
    await m.release();
    out.scores.forEach((s, i) => t.true(Math.abs(s.delta - direct[i]!) < 1e-6));
    t.deepEqual(out.order, rankOrder(out.scores, 'reward'));
    const p = await v.predict({ features: [candidateFeatures(packet, candidates[0])] });
    t.true(Math.abs(p.scores[0]!.delta - direct[0]!) < 1e-6);
    t.is((await v.info(null)).ranked, candidates.length);
    await rt.cluster.kill(v);
  } finally {
    await rt.shutdown();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('Scorer actor - a missing model is a typed error that says how to train it', async (t) => {
  const e = await t.throwsAsync(ValueModel.fromPath('/nonexistent/validation.onnx'), { instanceOf: ValidatorModelMissingError });
  t.is(e!.code, 'VALIDATOR_MODEL_MISSING');
  t.regex(e!.message, /trainValueModels\(\)/);
  const rt = await init({ inProcess: true });
  try {
    const err = await t.throwsAsync(rt.cluster.spawn(Scorer, { models: { validation: { object: 'nope/validation.onnx' }, reward: { object: 'nope/reward.onnx' } } }));
    t.regex(err!.message, /no validator model at object:nope\/validation\.onnx.*trainValueModels/);
    const empty = await rt.cluster.spawn(Scorer, {});
    const e2 = await t.throwsAsync(empty.predict({ features: [[0]] }));
    t.true(e2 instanceof Hr1Error);
    t.is((e2 as Hr1Error).code, 'VALIDATOR_MODEL_MISSING');
    await rt.cluster.kill(empty);
  } finally {
    await rt.shutdown();
  }
});
