/**
 * A tiny DBBench sketch parser: built by `buildZoo` through the real torch trainer
 * (learner/sketch.py), exported to ONNX (fp32 and the fp16 copy that is vendored), served by
 * onnxruntime-node through lmTarget and played on real dev tasks (SQLite) through runEpisode.
 * A build is deterministic (the same bytes twice), and training moves the parser off an
 * untrained one on held-out synthetic requests.
 */
import test from 'ava';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Rng } from '../../../cluster/rng.ts';
import { runEpisode } from '../../../harness/index.ts';
import { EVAL_SPLIT, envFactory, taskIds } from '../../../policies/targets/lm/bc.ts';
import { lmModel, lmTarget } from '../../../policies/targets/lm/model.ts';
import { buildZoo, modelDir, readMeta, resolveConfig, ZOO, type ZooConfig } from '../../../policies/targets/lm/zoo.ts';
import { loadSketch } from '../../../policies/targets/lm/dbbench/sketch-model.ts';
import { sketchExample, SKETCH_KINDS } from '../../../policies/targets/lm/dbbench/sketch.ts';
import { synthTasks } from '../../../policies/targets/lm/dbbench/synth.ts';
import { isLmTargetError } from '../../../policies/targets/lm/errors.ts';

const dir = mkdtempSync(join(tmpdir(), 'hr1-zoo-sketch-'));
const again = mkdtempSync(join(tmpdir(), 'hr1-zoo-sketch2-'));
test.after.always(() => {
  rmSync(dir, { recursive: true, force: true });
  rmSync(again, { recursive: true, force: true });
});

const base = ZOO.find((z) => z.name === 'db-sketch-a')!;
// the tiny budget is 30 tasks; this entry gets 400 (a few seconds of data) so there is something to learn
// a smaller encoder than the zoo's (d64 × 2) keeps the builds to seconds of CPU
const small = { dModel: 64, nLayers: 2, nHeads: 2, dFf: 128 };
const zoo: ZooConfig[] = [
  ...ZOO,
  { ...base, ...small, name: 'db-sketch-t', episodes: 400, steps: 120 },
  { ...base, ...small, name: 'db-sketch-untrained', episodes: 400, steps: 0 },
  // built twice (here and in another folder): the same bytes
  { ...base, ...small, name: 'db-sketch-d', episodes: 40, steps: 10 },
];
const TASKS = taskIds('dbbench', EVAL_SPLIT.dbbench);
const OPERATION = /^Action: Operation\n```sql\n(SELECT|INSERT|UPDATE|DELETE) [^\n]+\n```$/;

const built = buildZoo({ only: ['db-sketch-t', 'db-sketch-untrained', 'db-sketch-d'], dir, zoo, jobs: 2 });

/** share of held-out synthetic requests whose statement kind the parser reads right */
async function kindAccuracy(name: string): Promise<number> {
  const runner = await loadSketch(join(modelDir(resolveConfig(name, zoo), dir), 'model.onnx'), name);
  try {
    const tasks = await synthTasks(new Rng('sketch-heldout'), 60, { rename: 1, phrasing: 'wide' });
    let right = 0;
    let n = 0;
    for (const t of tasks) {
      const ex = sketchExample(t);
      if (!ex) continue;
      const { out } = await runner.run({ question: t.description, table: t.tableName, columns: t.columns });
      const ks = Array.from(out.kind);
      if (ks.indexOf(Math.max(...ks)) === ex.kind) right++;
      n++;
    }
    return right / Math.max(1, n);
  } finally {
    await runner.release();
  }
}

test('sketch zoo - a small parser trains, learns the statement kinds, and plays dev tasks with whole SQL statements', async (t) => {
  t.timeout(600_000); // a loaded 2-core machine; alone the two builds take well under a minute
  const results = await built;
  const r = results.find((x) => x.id === 'db-sketch-t')!;
  t.false(r.cached);
  t.true(r.lossLast < r.lossFirst * 0.7, `loss ${r.lossFirst.toFixed(2)} → ${r.lossLast.toFixed(2)}`);
  const meta = readMeta(resolveConfig('db-sketch-t', zoo), dir)!;
  t.is(meta.config.kind, 'sketch');
  t.true(meta.rows > 350, `${meta.rows} examples from ${meta.decisions} tasks`);
  const trained = await kindAccuracy('db-sketch-t');
  const untrained = await kindAccuracy('db-sketch-untrained');
  t.log(`statement kind read right on 60 held-out synthetic requests: trained ${(trained * 100).toFixed(0)} %, untrained ${(untrained * 100).toFixed(0)} % (chance ${(100 / SKETCH_KINDS.length).toFixed(0)} %)`);
  t.true(trained > untrained + 0.15);
  const m = await lmTarget('db-sketch-t', { dir, zoo });
  try {
    const recs = await Promise.all(TASKS.slice(0, 3).map((id) => runEpisode(envFactory('dbbench', id), { model: m, seed: 1 })));
    for (const rec of recs) {
      t.log(`${rec.taskId}: ${rec.outcome.status}; first reply ${JSON.stringify(rec.steps[0]?.proposal?.slice(0, 160))}`);
      t.regex(rec.steps[0]!.proposal ?? '', OPERATION);
      t.not(rec.outcome.status, 'model_error');
      // the agent loop answers: a result is answered, an SQL error is tried again, three at most
      t.regex(rec.steps[rec.steps.length - 1]!.proposal ?? '', /^Action: Answer\nFinal Answer: /);
    }
  } finally {
    await m.release();
  }
  // the decoder-only API names the other entry point
  await t.throwsAsync(lmModel('db-sketch-t', { dir, zoo }), { message: /is a sketch parser.*lmTarget/ });
  const e = await lmModel('db-sketch-t', { dir, zoo }).catch((x: unknown) => x);
  t.true(isLmTargetError(e));
});

test('sketch zoo - a build is deterministic: the same config gives the same ONNX bytes, and a second build is cached', async (t) => {
  t.timeout(600_000);
  await built;
  const [second] = await buildZoo({ only: ['db-sketch-d'], dir: again, zoo });
  const a = readFileSync(join(modelDir(resolveConfig('db-sketch-d', zoo), dir), 'model.onnx'));
  const b = readFileSync(join(second!.dir, 'model.onnx'));
  t.true(a.equals(b), 'byte-identical model.onnx');
  const fp16 = readFileSync(join(second!.dir, 'model.fp16.onnx'));
  t.true(fp16.length < a.length * 0.6, `fp16 copy ${fp16.length} bytes against ${a.length}`);
  const [cached] = await buildZoo({ only: ['db-sketch-d'], dir: again, zoo });
  t.true(cached!.cached);
});
