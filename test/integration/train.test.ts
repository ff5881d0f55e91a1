import test from 'ava';
import Database from 'better-sqlite3';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { init } from '../../cluster/init.ts';
import { ConfigError } from '../../cluster/errors.ts';
import { TRAIN_LEARNER_FILE, TRAIN_SPLITS_FILE, resolveTrainConfig, trainEngineer, trainSplits } from '../../experiments/train.ts';
import { EpisodeCache, SEED_SPACES, baseRecords, findOverlaps } from '../../drivers/index.ts';
import { extractPacket } from '../../policies/engineer/index.ts';
import { getMethod } from '../../experiments/runner/methods.ts';
import { MethodProposal } from '../../experiments/runner/best-of-k.ts';
import { checkCandidate } from '../../drivers/reward.ts';
import { canonicalJson, toPatch } from '../../harness/index.ts';

// the machinery, not the engineer's quality: the smallest model whose window holds a prompt and a patch
const SMALL = { dModel: 64, nLayers: 1, nHeads: 2, maxLen: 768 };

test('train - SFT then GRPO end to end: the loss falls, every sampled patch parses, an ONNX engineer comes out', async (t) => {
  const out = join(tmpdir(), `hr1-train-${process.pid}`);
  rmSync(out, { recursive: true, force: true });
  const cfg = resolveTrainConfig(undefined, { model: SMALL, env: 'alfworld', target: 'sim/llama-3b', batchSize: 8, sft: { batches: 3, k: 3, epochs: 8, batchSize: 8 }, grpo: { iterations: 2, k: 4 }, out });
  const rt = await init({ inProcess: true });
  try {
    const r = await trainEngineer(rt.cluster, cfg, () => {});
    const sft = r.iterations.filter((x) => x.phase === 'sft');
    t.is(sft.length, 8);
    t.true(sft[sft.length - 1]!.loss! < sft[0]!.loss! * 0.7, `loss ${sft[0]!.loss} → ${sft[sft.length - 1]!.loss}`);
    const g = r.iterations.filter((x) => x.phase === 'grpo');
    t.true(g.length >= 1);
    for (const it of g) {
      t.true(it.validRate! >= 0.99, 'the grammar makes every sample a valid patch');
      t.true(Number.isFinite(it.meanDelta!) && Number.isFinite(it.entropy!) && Number.isFinite(it.clipFrac!));
      t.truthy(it.ms.rollout !== undefined && it.ms.sampling !== undefined && it.ms.validation !== undefined && it.ms.update !== undefined);
    }
    t.true(existsSync(r.onnx) && readFileSync(r.onnx).length > 10_000);
    const lines = readFileSync(join(out, 'iterations.jsonl'), 'utf8').trim().split('\n');
    t.is(lines.length, r.iterations.length);
    t.true(existsSync(join(out, 'sft.jsonl')));
    // where the updates ran, for a rerun elsewhere to compare
    const facts = JSON.parse(readFileSync(join(out, TRAIN_LEARNER_FILE), 'utf8'));
    t.regex(facts.device, /^(cpu|cuda)/);
    t.true(typeof facts.torch === 'string' && facts.torch.length > 0 && 'blas' in facts && 'cpu' in facts);
    // the run lists every (task, seed) it trained on: SFT batches and GRPO batches, apart
    const splits = JSON.parse(readFileSync(join(out, TRAIN_SPLITS_FILE), 'utf8'));
    t.deepEqual(splits, JSON.parse(JSON.stringify(trainSplits(cfg))));
    t.is(splits.envs.alfworld.sft.length, 3 * 8);
    t.is(splits.envs.alfworld.grpo.length, 2 * 8);
    t.true(splits.envs.alfworld.grpo.every((e: { seed: number }) => e.seed >= SEED_SPACES.grpo));
    t.deepEqual(findOverlaps([{ name: 'sft', env: 'alfworld', episodes: splits.envs.alfworld.sft }, { name: 'grpo', env: 'alfworld', episodes: splits.envs.alfworld.grpo }]), []);
    // the engineer as experiment rows: greedy, and sampled as GRPO samples (the same patch for the same seed and packet)
    const packet = JSON.parse(readFileSync(join(out, 'sft.jsonl'), 'utf8').trim().split('\n')[0]!).packet;
    const ctx = (seed: number) => ({ env: 'alfworld', target: 'sim/llama-3b', packet, trainRecords: [], trainEpisodes: [], seed, cluster: rt.cluster, cache: null, envOptions: {}, options: { engineer: out, editor: { k: 1, select: 'first' as const } } });
    const greedy = getMethod('engineer-grpo');
    t.is(canonicalJson(await greedy.propose(ctx(0))), canonicalJson(await greedy.propose(ctx(5))), 'greedy ignores the seed');
    const sampled = getMethod('engineer-grpo-sampled');
    t.is(canonicalJson(await sampled.propose(ctx(3))), canonicalJson(await sampled.propose(ctx(3))), 'the same seed and packet: the same patch');
    const draws = new Set<string>();
    for (let s = 0; s < 6; s++) draws.add(canonicalJson(await sampled.propose(ctx(s))));
    t.true(draws.size >= 2, `${draws.size} distinct patches over 6 seeds at T 1`);
    for (const d of draws) t.notThrows(() => toPatch(JSON.parse(d)), 'every draw is a valid patch');
    // the packet-reading control: on the engineer's own target it is the engineer; on another it
    // writes the patch of the packet the engineer's target's rollout of the same batch gives
    const transfer = getMethod('engineer-grpo-transfer');
    t.is(canonicalJson(await transfer.propose(ctx(0))), canonicalJson(await greedy.propose(ctx(0))));
    const episodes = splits.envs.alfworld.sft.slice(0, 8);
    const own = extractPacket(await baseRecords(rt.cluster, { env: 'alfworld', target: 'sim/llama-3b', cache: null, envOptions: {}, episodes }));
    const cache = new EpisodeCache(':memory:');
    const other = { ...ctx(0), target: 'sim/qwen-3b', packet: extractPacket([]), trainEpisodes: episodes, cache };
    t.is(canonicalJson(await transfer.propose(other)), canonicalJson(await greedy.propose({ ...ctx(0), packet: own })));
    // it rolled out the engineer's target on those episodes (not the evaluated one, not nothing): replaying them adds nothing to the cache
    t.is(cache.size(), episodes.length);
    await baseRecords(rt.cluster, { env: 'alfworld', target: 'sim/llama-3b', cache, envOptions: {}, episodes });
    t.is(cache.size(), episodes.length);
    cache.close();
    // best of K on the packet's own batch: the greedy patch and K − 1 draws, each rerun on the
    // batch, the largest Δ submitted (ties: the earlier); the same packet and seed, the same choice
    const bok = getMethod('engineer-grpo-best-of-k');
    const trainRecords = await baseRecords(rt.cluster, { env: 'alfworld', target: 'sim/llama-3b', cache: null, envOptions: {}, episodes });
    const bctx = (seed: number) => ({ ...ctx(seed), packet: own, trainEpisodes: episodes, trainRecords, options: { engineer: out, editor: { k: 3, select: 'best-of-k' as const } } });
    const p1 = (await bok.propose(bctx(0))) as MethodProposal;
    t.true(p1 instanceof MethodProposal);
    const cands = p1.info.candidates!;
    t.is(cands.k, 3);
    t.is(cands.list.length, 3);
    t.is(cands.list[0]!.hash, (await checkCandidate(await greedy.propose({ ...ctx(0), packet: own }))).hash, 'the first candidate is the greedy patch');
    const deltas = cands.list.map((c) => (c.valid ? c.delta! : -Infinity));
    t.is(cands.chosen, deltas.indexOf(Math.max(...deltas)));
    t.is((await checkCandidate(p1.patch)).hash, cands.list[cands.chosen!]!.hash);
    const p2 = (await bok.propose(bctx(0))) as MethodProposal;
    t.deepEqual(p2.info.candidates, cands);
  } finally {
    await rt.shutdown();
    rmSync(out, { recursive: true, force: true });
  }
});

test('train - where no teacher proposal passes, the engineer learns the empty patch (sft.abstain); without it SFT has no data', async (t) => {
  const out = join(tmpdir(), `hr1-train-abstain-${process.pid}`);
  rmSync(out, { recursive: true, force: true });
  // Δ > 1 cannot happen: nothing is kept
  const base = { model: SMALL, env: 'alfworld', target: 'sim/llama-3b', batchSize: 8, sft: { batches: 1, k: 1, minDelta: 1, epochs: 15, batchSize: 8, lr: 0.01 }, grpo: { iterations: 0 } };
  const rt = await init({ inProcess: true });
  try {
    const lines: string[] = [];
    const r = await trainEngineer(rt.cluster, resolveTrainConfig(undefined, { ...base, out: join(out, 'on') }), (l) => lines.push(l));
    const rows = readFileSync(join(out, 'on', 'sft.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l));
    t.is(rows.length, 1);
    t.true(rows.every((x) => x.teacher.name === 'abstain' && canonicalJson(x.patch) === canonicalJson({})));
    t.true(lines.some((l) => /learns the empty patch on the 1 packet \(sft\.abstain\)/.test(l)), lines.join('\n'));
    t.is(r.sft.rows, rows.length);
    const sft = r.iterations.filter((x) => x.phase === 'sft');
    t.true(sft.length === 15 && sft[sft.length - 1]!.loss! < sft[0]!.loss! * 0.5, `loss ${sft[0]?.loss} → ${sft[sft.length - 1]?.loss}`);
    // the trained engineer writes the empty patch for its packet
    const ctx = { env: 'alfworld', target: 'sim/llama-3b', packet: rows[0].packet, trainRecords: [], trainEpisodes: [], seed: 0, cluster: rt.cluster, cache: null, envOptions: {}, options: { engineer: join(out, 'on'), editor: { k: 1, select: 'first' as const } } };
    t.is(canonicalJson(toPatch(await getMethod('engineer-sft').propose(ctx))), canonicalJson(toPatch({})));
    // abstain off: no rows, no SFT epochs, and the warning says how to turn it on
    const off: string[] = [];
    const r2 = await trainEngineer(rt.cluster, resolveTrainConfig(undefined, { ...base, sft: { ...base.sft, abstain: false }, out: join(out, 'off') }), (l) => off.push(l));
    t.is(r2.sft.rows, 0);
    t.is(r2.iterations.filter((x) => x.phase === 'sft').length, 0);
    t.true(off.some((l) => /sft\.abstain is off, so SFT has no data/.test(l)));
  } finally {
    await rt.shutdown();
    rmSync(out, { recursive: true, force: true });
  }
});

test('train - one engineer for several envs: SFT data from each, GRPO iterations take the envs in turn', async (t) => {
  t.timeout(600_000);
  const out = join(tmpdir(), `hr1-train-all-${process.pid}`);
  rmSync(out, { recursive: true, force: true });
  const cfg = resolveTrainConfig(undefined, { model: SMALL, env: 'alfworld,webshop,dbbench', target: 'sim/llama-3b', batchSize: 6, sft: { batches: 1, k: 3, epochs: 3, batchSize: 8 }, grpo: { iterations: 3, k: 3 }, out });
  const rt = await init({ inProcess: true });
  try {
    const r = await trainEngineer(rt.cluster, cfg, () => {});
    t.deepEqual(r.iterations.filter((x) => x.phase === 'grpo').map((x) => x.env), ['alfworld', 'webshop', 'dbbench']);
    for (const env of ['alfworld', 'webshop', 'dbbench']) t.true(existsSync(join(out, `sft-${env}.jsonl`)), env);
    t.true(existsSync(r.onnx));
  } finally {
    await rt.shutdown();
    rmSync(out, { recursive: true, force: true });
  }
});

test('train - one env on several targets (lm/a+lm/b): SFT batches and GRPO iterations take them in turn, splits.json and the rows say which', async (t) => {
  t.timeout(600_000);
  const out = join(tmpdir(), `hr1-train-multi-${process.pid}`);
  rmSync(out, { recursive: true, force: true });
  const cfg = resolveTrainConfig(undefined, { model: SMALL, env: 'alfworld', target: 'sim/llama-3b+sim/qwen-3b', batchSize: 6, sft: { batches: 2, k: 3, epochs: 2, batchSize: 8 }, grpo: { iterations: 4, k: 3 }, out });
  const rt = await init({ inProcess: true });
  const lines: string[] = [];
  try {
    const r = await trainEngineer(rt.cluster, cfg, (l) => lines.push(l));
    const grpo = r.iterations.filter((x) => x.phase === 'grpo');
    t.deepEqual(grpo.map((x) => x.target), ['sim/llama-3b', 'sim/qwen-3b', 'sim/llama-3b', 'sim/qwen-3b']);
    // every SFT row of the env in sft.jsonl, each target's batch played on that target: batch 0 on the first, batch 1 on the second
    const rows = readFileSync(join(out, 'sft.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { target: string; batch: { taskId: string; seed: number }[] });
    const splits = JSON.parse(readFileSync(join(out, TRAIN_SPLITS_FILE), 'utf8'));
    t.is(splits.envs.alfworld.target, 'sim/llama-3b');
    t.deepEqual(splits.envs.alfworld.targets, ['sim/llama-3b', 'sim/qwen-3b']);
    const batchOf = (b: number) => JSON.stringify(splits.envs.alfworld.sft.slice(6 * b, 6 * b + 6));
    for (const row of rows) t.is(JSON.stringify(row.batch), batchOf(row.target === 'sim/llama-3b' ? 0 : 1), row.target);
    t.deepEqual([...new Set(rows.map((x) => x.target))].sort(), ['sim/llama-3b', 'sim/qwen-3b'], 'rows from both targets');
    // the episodes were really played on both targets: each batch's episodes are in the run's cache under its own target only (a sim target's key carries its version: sim/llama-3b@sim-N)
    const db = new Database(join(out, 'episodes.sqlite'), { readonly: true });
    try {
      const played = (target: string, b: number) => splits.envs.alfworld.sft.slice(6 * b, 6 * b + 6).filter((e: { taskId: string; seed: number }) => db.prepare("SELECT 1 FROM episodes WHERE (target = ? OR target LIKE ? || '@%') AND task = ? AND seed = ?").get(target, target, e.taskId, e.seed)).length;
      t.deepEqual([played('sim/llama-3b', 0), played('sim/qwen-3b', 1), played('sim/llama-3b', 1), played('sim/qwen-3b', 0)], [6, 6, 0, 0]);
    } finally {
      db.close();
    }
    t.regex(lines.join('\n'), /alfworld on sim\/llama-3b \+ sim\/qwen-3b/);
  } finally {
    await rt.shutdown();
    rmSync(out, { recursive: true, force: true });
  }
});

test('train - a bad config names the option path', (t) => {
  t.throws(() => resolveTrainConfig(undefined, { target: 'sim/llama-3b++sim/qwen-3b' }), { instanceOf: ConfigError, message: /config\.target.*empty target/ });
  t.throws(() => resolveTrainConfig(undefined, { target: 'sim/llama-3b+sim/llama-3b' }), { instanceOf: ConfigError, message: /config\.target.*twice/ });
  t.throws(() => resolveTrainConfig(undefined, { target: 'sim/llama-3b+sim/qwen-3b+sim/qwen-8b', sft: { batches: 2 } }), { instanceOf: ConfigError, message: /config\.target.*3 targets but sft\.batches is 2/ });
  t.throws(() => resolveTrainConfig(undefined, { env: 'alfworld,webshop', target: 'a,b,c' }), { instanceOf: ConfigError, message: /config\.target.*one per env/ });
  t.throws(() => resolveTrainConfig(undefined, { env: 'alfworld,chess' }), { instanceOf: ConfigError, message: /config\.env/ });
  t.throws(() => resolveTrainConfig(undefined, { model: { maxLen: 256 } }), { instanceOf: ConfigError, message: /config\.model\.maxLen.*at least 768/ });
  t.throws(() => resolveTrainConfig(undefined, { grpo: { k: 1 } }), { instanceOf: ConfigError, message: /config\.grpo\.k/ });
  t.throws(() => resolveTrainConfig(undefined, { env: 'chess' }), { instanceOf: ConfigError, message: /config\.env/ });
  t.throws(() => resolveTrainConfig('/nonexistent.yaml', {}), { instanceOf: ConfigError, message: /no config file/ });
});

test('train - pipelined with staleness 0 makes exactly the synchronous updates: same Δ, losses, KL, candidates and engineer bytes', async (t) => {
  t.timeout(300_000);
  const { createHash } = await import('node:crypto');
  const base = { model: SMALL, env: 'alfworld', target: 'sim/llama-3b', batchSize: 6, sft: { batches: 2, k: 2, epochs: 3, batchSize: 8 }, grpo: { iterations: 3, k: 4, klCoef: 0.1 }, reward: { on: 'heldout', heldoutTasks: 6 } };
  const dir = join(tmpdir(), `hr1-pipe0-${process.pid}`);
  rmSync(dir, { recursive: true, force: true });
  const rt = await init({ inProcess: true });
  try {
    const sync = await trainEngineer(rt.cluster, resolveTrainConfig(undefined, { ...base, out: join(dir, 'sync') }), () => {});
    const lines: string[] = [];
    const piped = await trainEngineer(rt.cluster, resolveTrainConfig(undefined, { ...base, pipeline: { maxStaleness: 0 }, out: join(dir, 'piped') }), (l) => lines.push(l));
    t.true(lines.some((l) => /pipelined, staleness ≤ 0/.test(l)), lines.join('\n'));
    const strip = (xs: typeof sync.iterations) => xs.map(({ ms: _ms, ...rest }) => rest);
    t.deepEqual(strip(piped.iterations), strip(sync.iterations));
    t.is(readFileSync(join(dir, 'piped', 'candidates.jsonl'), 'utf8'), readFileSync(join(dir, 'sync', 'candidates.jsonl'), 'utf8'));
    const sha = (f: string) => createHash('sha256').update(readFileSync(f)).digest('hex');
    t.is(sha(piped.onnx), sha(sync.onnx), 'the same engineer, byte for byte');
    for (const ck of ['it-2.pt', 'it-3.pt']) t.is(sha(join(dir, 'piped', 'checkpoints', ck)), sha(join(dir, 'sync', 'checkpoints', ck)), `the same checkpoint ${ck}`);
    t.is(piped.pipeline.wallMs > 0 && sync.pipeline.wallMs > 0, true);
    const pj = JSON.parse(readFileSync(join(dir, 'piped', 'pipeline.json'), 'utf8'));
    t.is(pj.mode, 'pipelined');
    t.is(pj.maxStaleness, 0);
    t.true(pj.busyShare.validation > 0 && pj.busyShare.validation <= 1);
  } finally {
    await rt.shutdown();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('train - a run killed after a checkpoint resumes with --resume and makes the same updates (pipelined, staleness 1)', async (t) => {
  // three training runs: on a loaded machine (CI) this takes minutes, and its result must not change
  t.timeout(600_000);
  const { hr1, waitFor } = await import('./processes.ts');
  const { writeFileSync, mkdirSync } = await import('node:fs');
  const dir = join(tmpdir(), `hr1-resume-${process.pid}`);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const cfgFile = join(dir, 'cfg.yaml');
  writeFileSync(cfgFile, 'env: alfworld\ntarget: sim/llama-3b\nbatchSize: 4\nmodel: { dModel: 64, nLayers: 1, nHeads: 2, maxLen: 768 }\nsft: { batches: 2, k: 2, epochs: 3, batchSize: 8 }\ngrpo: { iterations: 5, k: 4, temperature: 1.0, klCoef: 0.1, stdFloor: 0.05 }\nreward: { on: heldout, heldoutTasks: 4 }\ncheckpointEvery: 2\n');
  // pipelined: a resumed run needs the older policy version its next samples draw from, kept beside the checkpoint
  const args = (out: string) => ['train', '--config', cfgFile, '--in-process', '--out', out, '--pipeline', '--max-staleness', '1'];
  const full = hr1(args(join(dir, 'full')));
  t.is(await full.exited, 0, full.out());
  const cut = hr1(args(join(dir, 'cut')));
  // killed after iteration 3: on a loaded machine the kill can land an iteration or so later, so the
  // run resumes after the checkpoint of iteration 2 or 4; either way 1+ iterations are left to redo
  await waitFor(cut, /grpo 3\/5/, 120_000);
  cut.child.kill('SIGKILL');
  await cut.exited;
  const resumed = hr1([...args(join(dir, 'cut')), '--resume']);
  t.is(await resumed.exited, 0, resumed.out());
  t.regex(resumed.out(), /resuming after GRPO iteration [24] /);
  const read = (f: string) => readFileSync(f, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { phase: string; iteration: number; meanDelta?: number; loss?: number; entropy?: number; kl?: number; policyVersion?: number });
  const a = read(join(dir, 'full', 'iterations.jsonl')).filter((x) => x.phase === 'grpo');
  const b = read(join(dir, 'cut', 'iterations.jsonl')).filter((x) => x.phase === 'grpo');
  t.deepEqual(b.map((x) => x.iteration), [1, 2, 3, 4, 5]);
  // iteration t sampled from the engineer after update t − 2
  t.deepEqual(a.map((x) => x.policyVersion), [0, 0, 1, 2, 3]);
  t.deepEqual(b.map((x) => x.policyVersion), [0, 0, 1, 2, 3]);
  for (let i = 0; i < 5; i++) {
    t.is(b[i]!.meanDelta, a[i]!.meanDelta, `iteration ${i + 1} Δ`);
    t.is(b[i]!.loss?.toFixed(6), a[i]!.loss?.toFixed(6), `iteration ${i + 1} loss`);
    // the KL to the SFT engineer: the resumed run's reference came back from the checkpoint
    t.is(b[i]!.kl?.toFixed(6), a[i]!.kl?.toFixed(6), `iteration ${i + 1} KL`);
  }
  t.true(a.slice(1).some((x) => (x.kl ?? 0) > 0), 'once the policy moved, the KL to the SFT reference is > 0');
  // held-out reward: the GRPO candidates were scored on tasks outside each iteration's packet batch, listed in splits.json
  const splits = JSON.parse(readFileSync(join(dir, 'full', TRAIN_SPLITS_FILE), 'utf8'));
  t.is(splits.envs.alfworld.grpo.length, 5 * (4 + 4));
  t.true(splits.envs.alfworld.grpo.some((e: { seed: number }) => e.seed >= SEED_SPACES.heldout && e.seed < SEED_SPACES.grpo));
  rmSync(dir, { recursive: true, force: true });
});

test('train - with a validator, 2K patches are sampled and only the K ranked best are rerun', async (t) => {
  const { trainValueModels } = await import('../../policies/scorer/index.ts');
  const { EpisodeCache, generateOutcomes } = await import('../../drivers/index.ts');
  const dir = join(tmpdir(), `hr1-train-val-${process.pid}`);
  rmSync(dir, { recursive: true, force: true });
  const rt = await init({ inProcess: true });
  try {
    const cache = new EpisodeCache(':memory:');
    const { rows } = await generateOutcomes({ cluster: rt.cluster, cache, targets: ['sim/llama-3b'], envs: ['alfworld'], trainBatches: 2, heldoutBatches: 0, size: 6, walks: 6 });
    await trainValueModels({ rows, outDir: join(dir, 'models'), seed: 0, epochs: 60 });
    cache.close();
    const lines: string[] = [];
    const cfg = resolveTrainConfig(undefined, { model: SMALL, env: 'alfworld', target: 'sim/llama-3b', batchSize: 6, sft: { batches: 2, k: 2, epochs: 3, batchSize: 8 }, grpo: { iterations: 2, k: 3 }, validator: join(dir, 'models'), out: join(dir, 'run') });
    const r = await trainEngineer(rt.cluster, cfg, (l) => lines.push(l));
    t.true(lines.some((l) => /sampling 6, rerunning the best 3/.test(l)), lines.join('\n'));
    const g = r.iterations.filter((x) => x.phase === 'grpo');
    t.true(g.length === 2 && g.every((x) => x.validRate === 1));
  } finally {
    await rt.shutdown();
    rmSync(dir, { recursive: true, force: true });
  }
});
