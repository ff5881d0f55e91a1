/**
 * CI's zoo build: two tiny lm targets trained by the real torch learner, served by
 * onnxruntime-node, played on ALFWorld through the harness against an untrained model.
 */
import test from 'ava';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runEpisode, type EpisodeRecord } from '../../../harness/index.ts';
import { EVAL_SPLIT, envFactory, taskIds } from '../../../policies/targets/lm/bc.ts';
import { lmModel } from '../../../policies/targets/lm/model.ts';
import { buildZoo, LM_SERVING_VERSION, readMeta, resolveConfig, ZOO, type ZooConfig } from '../../../policies/targets/lm/zoo.ts';
import { verifyVendored } from '../../../policies/targets/lm/vendor-build.ts';
import { measureVanilla, zooTableJson, zooTableMarkdown, zooTableRows } from '../../../policies/targets/lm/table.ts';
import { readFileSync } from 'node:fs';

const dir = mkdtempSync(join(tmpdir(), 'hr1-zoo-'));
test.after.always(() => rmSync(dir, { recursive: true, force: true }));

// the untrained baseline: the first tiny config with no optimizer step
const zoo: ZooConfig[] = [...ZOO, { ...ZOO.find((z) => z.name === 'alf-xs-192-a')!, name: 'untrained', steps: 0 }];
const VERB = /^(go to|take|put|open|close|toggle|clean|heat|cool|use|examine|look|inventory)\b/;
const GAMES = taskIds('alfworld', EVAL_SPLIT.alfworld).slice(0, 6);
const FEW = GAMES.slice(0, 3);

interface Figures {
  verbForm: number;
  noop: number;
  success: number;
  records: EpisodeRecord[];
}

async function play(name: string, seed = 1, games = GAMES): Promise<Figures> {
  const m = await lmModel(name, { dir, zoo });
  const records: EpisodeRecord[] = [];
  try {
    for (const g of games) records.push(await runEpisode(envFactory('alfworld', g), { model: m, seed }));
  } finally {
    await m.release();
  }
  const steps = records.flatMap((r) => r.steps);
  return {
    verbForm: steps.filter((s) => VERB.test(s.action)).length / steps.length,
    noop: steps.filter((s) => s.observation.startsWith('Nothing happens')).length / steps.length,
    success: records.filter((r) => r.outcome.won).length / records.length,
    records,
  };
}

const built = (async () => {
  const t0 = performance.now();
  // one learner process per build, two at once (two cores)
  const results = await buildZoo({ only: ['alf-xs-192-a', 'alf-xs-192-b', 'untrained'], tiny: true, dir, zoo, jobs: 2 });
  return { results, s: (performance.now() - t0) / 1000 };
})();

test('zoo build - two tiny targets train, export ONNX and are cached by config hash', async (t) => {
  const { results, s } = await built;
  t.is(results.length, 3);
  for (const r of results.slice(0, 2)) {
    t.false(r.cached);
    t.true(r.lossLast < r.lossFirst * 0.6, `${r.id}: loss ${r.lossFirst.toFixed(2)} → ${r.lossLast.toFixed(2)}`);
    t.log(`${r.id}: ${r.params} params, loss ${r.lossFirst.toFixed(2)} → ${r.lossLast.toFixed(2)}, ${(r.ms / 1000).toFixed(1)} s`);
  }
  t.not(results[0]!.hash, results[1]!.hash);
  t.log(`3 builds in ${s.toFixed(1)} s`);
  const again = await buildZoo({ only: ['alf-xs-192-a'], tiny: true, dir, zoo });
  t.true(again[0]!.cached);
  t.is(again[0]!.hash, results[0]!.hash);
});

test('zoo verify - the shipped tiny models are what this checkout builds (fp16 export of the builds above against the vendored manifest)', async (t) => {
  await built;
  const lines = await verifyVendored({ only: ['alf-xs-192-a@tiny', 'alf-xs-192-b@tiny'], dir });
  // 'match': the same bytes; 'close': the same graph, weights a float rounding apart (another CPU's kernels)
  t.log(lines.map((l) => `${l.id}: ${l.status} ${l.detail}`).join('\n'));
  t.deepEqual(lines.map((l) => [l.id, l.status === 'close' ? 'match' : l.status]), [['alf-xs-192-a@tiny', 'match'], ['alf-xs-192-b@tiny', 'match']], lines.map((l) => `${l.id}: ${l.status} ${l.detail}`).join('; '));
});

test('zoo verify - two models of the same shape trained from other seeds are far more than float-close (what `close` tolerates is rounding, not another model)', async (t) => {
  const { LearnerProcess } = await import('../../../learner/process.ts');
  const { FLOAT_CLOSE } = await import('../../../policies/targets/lm/vendor-build.ts');
  const { vendoredModelDir, DEFAULT_VENDORED_DIR } = await import('../../../policies/targets/lm/vendor.ts');
  const lp = await LearnerProcess.start();
  try {
    const a = join(vendoredModelDir('alf-xs-192-a@tiny', DEFAULT_VENDORED_DIR), 'model.onnx');
    const b = join(vendoredModelDir('alf-xs-192-b@tiny', DEFAULT_VENDORED_DIR), 'model.onnx');
    const other = await lp.compareOnnx({ a, b });
    t.true(other.sameGraph);
    t.true(other.maxRel > 10 * FLOAT_CLOSE, `seed 1 vs seed 2: ${other.maxRel}`);
    const self = await lp.compareOnnx({ a, b: a });
    t.deepEqual([self.sameGraph, self.maxAbs, self.differing], [true, 0, 0]);
    t.regex((await t.throwsAsync(lp.compareOnnx({ a, b: '/nonexistent.onnx' })))!.message, /cannot read \/nonexistent\.onnx as ONNX/);
  } finally {
    await lp.close();
  }
});

test('zoo build - deterministic: the same config builds the same weights in another folder', async (t) => {
  await built;
  // a config of the tiny models' shape on a smaller budget: the same data, seed and steps twice
  const small: ZooConfig[] = [...zoo, { ...ZOO.find((z) => z.name === 'alf-xs-192-b')!, name: 'det-b', episodes: 6, steps: 24 }];
  const dirs = [mkdtempSync(join(tmpdir(), 'hr1-zoo-')), mkdtempSync(join(tmpdir(), 'hr1-zoo-'))];
  try {
    const [[a], [b]] = [await buildZoo({ only: ['det-b'], dir: dirs[0]!, zoo: small }), await buildZoo({ only: ['det-b'], dir: dirs[1]!, zoo: small })];
    t.false(a!.cached || b!.cached);
    t.is(a!.hash, b!.hash);
    t.deepEqual(readFileSync(join(a!.dir, 'model.onnx')), readFileSync(join(b!.dir, 'model.onnx')));
    t.is(a!.lossLast, b!.lossLast);
    t.true(a!.lossLast < a!.lossFirst, 'it trained');
  } finally {
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  }
});

test('lm target - a tiny trained model writes actions and does less nothing than an untrained one', async (t) => {
  await built;
  const a = await play('alf-xs-192-a@tiny');
  const b = await play('alf-xs-192-b@tiny');
  const u = await play('untrained@tiny');
  for (const [n, f] of [['alf-xs-192-a@tiny', a], ['alf-xs-192-b@tiny', b], ['untrained', u]] as const) {
    t.log(`${n}: verb-form ${(f.verbForm * 100).toFixed(0)}%, nothing happens ${(f.noop * 100).toFixed(0)}%, success ${(f.success * 100).toFixed(0)}% on ${GAMES.length} valid_seen games`);
  }
  for (const f of [a, b]) {
    t.true(f.verbForm >= 0.8, `verb-form ${f.verbForm}`);
    t.true(f.noop < u.noop - 0.05, `noop ${f.noop} vs untrained ${u.noop}`);
  }
  t.true(u.verbForm < 0.3, `untrained verb-form ${u.verbForm}`);
});

test('lm target - the same episode seed gives the same episode; another seed another one', async (t) => {
  await built;
  const x = await play('alf-xs-192-a@tiny', 3, FEW);
  const y = await play('alf-xs-192-a@tiny', 3, FEW);
  const z = await play('alf-xs-192-a@tiny', 4, FEW);
  t.deepEqual(x.records, y.records);
  t.notDeepEqual(x.records.map((r) => r.steps.map((s) => s.action)), z.records.map((r) => r.steps.map((s) => s.action)));
});

test('zoo build - a -ft variant trains further from its (cached) base, with its weights and vocabulary', async (t) => {
  await built;
  const rs = await buildZoo({ only: ['alf-xs-192-a-ft'], tiny: true, dir });
  t.deepEqual(rs.map((r) => [r.id, r.cached]), [['alf-xs-192-a@tiny', true], ['alf-xs-192-a-ft@tiny', false]]);
  const base = readMeta(resolveConfig('alf-xs-192-a@tiny'), dir)!;
  const ft = readMeta(resolveConfig('alf-xs-192-a-ft@tiny'), dir)!;
  t.is(ft.config.base, 'alf-xs-192-a@tiny');
  t.deepEqual(ft.words, base.words);
  t.is(ft.params, base.params);
  // it starts where the base ended, not from scratch
  t.true(ft.lossFirst < base.lossFirst * 0.6, `ft first loss ${ft.lossFirst} vs base ${base.lossFirst}`);
  t.notDeepEqual(readFileSync(join(rs[0]!.dir, 'model.onnx')), readFileSync(join(rs[1]!.dir, 'model.onnx')));
  const m = await lmModel('alf-xs-192-a-ft@tiny', { dir });
  t.is(m.name, 'lm/alf-xs-192-a-ft@tiny');
  await m.release();
});

test('zoo build - DAgger: the base plays, the teacher labels every state it reaches; a -da variant builds on it', async (t) => {
  t.timeout(600_000);
  await built;
  const { collectDecisions } = await import('../../../policies/targets/lm/bc.ts');
  const m = await lmModel('alf-xs-192-a@tiny', { dir, zoo });
  try {
    const teacherOnly = await collectDecisions({ env: 'alfworld', episodes: 2, seed: 5 });
    const da = () => collectDecisions({ env: 'alfworld', episodes: 2, seed: 5, student: m, studentEpisodes: 4 });
    const a = await da();
    const b = await da();
    t.deepEqual(a.map((d) => [d.taskId, d.action, d.actions]), b.map((d) => [d.taskId, d.action, d.actions]));
    const students = a.filter((d) => !teacherOnly.some((x) => x.taskId === d.taskId && x.actions.join('|') === d.actions.join('|')));
    t.true(students.length > teacherOnly.length, `${students.length} student decisions, ${teacherOnly.length} teacher decisions`);
    // the student's own mistakes are in the data, each labelled with an action the teacher would take there
    const afterMiss = students.filter((d) => d.messages[d.messages.length - 1]!.content.startsWith('Nothing happens'));
    t.true(afterMiss.length > 0);
    t.true(students.filter((d) => d.admissible.includes(d.action)).length >= 0.95 * students.length);
    t.log(`${students.length} student decisions, ${afterMiss.length} after "Nothing happens."`);
  } finally {
    await m.release();
  }
  const daZoo: ZooConfig[] = [...zoo, { ...ZOO.find((z) => z.name === 'alf-xs-192-a-ft')!, name: 'alf-xs-192-a-da', episodes: 4, steps: 20, dagger: 6 }];
  const rs = await buildZoo({ only: ['alf-xs-192-a-da'], tiny: true, dir, zoo: daZoo });
  const meta = readMeta(resolveConfig('alf-xs-192-a-da@tiny', daZoo), dir)!;
  t.is(meta.config.dagger, 6);
  t.true(rs[1]!.cached === false && meta.decisions > 0);
});

test('zoo table - figures per model and env with intervals over tasks, cached next to the model; --json has one object per model', async (t) => {
  await built;
  const only = ['alf-xs-192-a@tiny', 'untrained@tiny'];
  const progress: { done: number; total: number; cached: number }[] = [];
  const rows = await zooTableRows({ only, tasks: 3, seeds: 2, dir, zoo, onProgress: (p) => progress.push(p) });
  // every episode counted, up to the total (2 models × 3 tasks × 2 seeds)
  t.deepEqual(progress.at(-1), { done: 12, total: 12, cached: 0 });
  t.deepEqual(progress.map((p) => p.done), Array.from({ length: 13 }, (_, i) => i));
  const json = zooTableJson(rows);
  t.deepEqual(json.map((j) => [j['name'], j['env'], j['episodes']]), [['alf-xs-192-a@tiny', 'alfworld', 6], ['untrained@tiny', 'alfworld', 6]]);
  for (const j of json) {
    for (const k of ['params', 'success', 'score', 'noop', 'invalid', 'meanSteps']) t.is(typeof j[k], 'number', k);
    const [lo, hi] = j['successCi'] as [number, number];
    t.true(lo <= (j['success'] as number) && (j['success'] as number) <= hi);
  }
  // the untrained model's replies are mostly not actions; the trained one's are
  t.true((json[1]!['noop'] as number) > (json[0]!['noop'] as number));
  const again = await measureVanilla('alf-xs-192-a@tiny', 'alfworld', { tasks: 3, seeds: 2, dir, zoo });
  t.deepEqual(again, rows[0]!.vanilla);
  // measured again: the figures come from the cache, counted as done at once
  const cachedProgress: { done: number; total: number; cached: number }[] = [];
  await zooTableRows({ only, tasks: 3, seeds: 2, dir, zoo, onProgress: (p) => cachedProgress.push(p) });
  t.deepEqual(cachedProgress.at(-1), { done: 12, total: 12, cached: 12 });
  t.true(existsSync(join(dir, resolveConfig('alf-xs-192-a@tiny', zoo).hash, `vanilla-alfworld-3x2-s${LM_SERVING_VERSION}.json`)));
  const md = zooTableMarkdown(rows);
  t.regex(md, /\| lm\/alf-xs-192-a@tiny \| alfworld \| 64 × 1 \| 192 \|.*\[\d+\.\d%, \d+\.\d%\]/);
  t.regex(md, /alfworld 3 × 2/);
});
