import test from 'ava';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LearnerDependencyError, LearnerOpError, LearnerProcess, reproducibleBlasEnv } from '../../../learner/index.ts';
import { BOS, CONFIG, EOS, copyBatch, sum } from './toy.ts';

const dir = mkdtempSync(join(tmpdir(), 'hr1-learner-test-'));
test.after.always(() => rmSync(dir, { recursive: true, force: true }));

let lp: LearnerProcess;
test.before(async () => {
  // fails with LearnerDependencyError (naming the apt packages) where torch is missing
  lp = await LearnerProcess.start();
});
test.after.always(async () => lp?.close());

test.serial('learner - init reports the model and runs on the CPU with one thread here', async (t) => {
  const info = await lp.init({ config: CONFIG, seed: 7 });
  t.true(info.initialized);
  t.is(info.config!.vocabSize, 16);
  t.is(info.step, 0);
  t.true(info.params > 10_000);
  if (!info.cuda) {
    t.is(info.device, 'cpu');
    t.is(info.threads, 1);
  }
});

test.serial('learner - OpenBLAS runs as many threads as torch (one), whatever the core count; a user-set OPENBLAS_NUM_THREADS wins', async (t) => {
  const info = await lp.info();
  if (info.blas === null) {
    t.log("torch's BLAS is not OpenBLAS");
    t.pass();
    return;
  }
  // no second thread spinning on sched_yield beside torch's one, and the same split of every product on any machine
  t.is(info.blasThreads, process.env['OPENBLAS_NUM_THREADS'] === undefined ? Number(process.env['HR1_TORCH_THREADS'] ?? 1) : Number(process.env['OPENBLAS_NUM_THREADS']));
  const other = await LearnerProcess.start({ env: { OPENBLAS_NUM_THREADS: '2' } });
  try {
    t.is((await other.info()).blasThreads, 2);
  } finally {
    await other.close();
  }
});

test.serial('learner - OpenBLAS runs its Haswell kernels on an x86-64 CPU with AVX2 (the same bits on every such machine), unless the user chose', async (t) => {
  const info = await lp.info();
  const pinned = reproducibleBlasEnv().OPENBLAS_CORETYPE;
  if (info.blas === null || pinned === undefined) {
    t.log(`torch's BLAS: ${info.blas ?? 'not OpenBLAS'}; pin: ${pinned ?? 'none (not x86-64 with AVX2, or OPENBLAS_CORETYPE set)'}`);
    t.pass();
    return;
  }
  t.is(info.blas, 'Haswell');
  // a user's own choice wins
  const other = await LearnerProcess.start({ env: { OPENBLAS_CORETYPE: 'Sandybridge' } });
  try {
    t.is((await other.info()).blas, 'Sandybridge');
  } finally {
    await other.close();
  }
});

test.serial('learner - SFT steps lower the loss on a toy copy task', async (t) => {
  await lp.init({ config: CONFIG, seed: 7 });
  const b = copyBatch(32, 6, 1);
  const losses: number[] = [];
  for (let i = 0; i < 25; i++) losses.push((await lp.sftStep({ ...b, lr: 3e-3 })).loss);
  t.true(losses[0]! > 2, `first loss ${losses[0]}`);
  t.true(losses.at(-1)! < 0.5 * losses[0]!, `loss ${losses[0]} → ${losses.at(-1)}`);
  const held = copyBatch(16, 6, 99);
  const lp1 = await lp.logprobs(held);
  t.is(lp1.logprobs[0]!.length, 7);
});

test.serial('learner - SFT prompt targets: prompt positions count as labels and are learned; bad positions are a typed error', async (t) => {
  await lp.init({ config: CONFIG, seed: 5 });
  // the prompt carries a pattern at positions 2..4 that only prompt targets teach
  const prompt = [BOS, 9, 5, 6, 7, 9];
  const batch = { prompts: [prompt, prompt], completions: [[EOS], [EOS]] };
  const plain = await lp.sftStep({ ...batch, lr: 0 });
  t.is(plain.tokens, 2);
  const withTargets = await lp.sftStep({ ...batch, promptTargets: [[2, 3, 4], [2, 3, 4]], lr: 0 });
  t.is(withTargets.tokens, 8);
  const lpOf = async (): Promise<number> => sum((await lp.logprobs({ prompts: [[BOS, 9]], completions: [[5, 6, 7]] })).logprobs[0]!);
  const before = await lpOf();
  for (let i = 0; i < 10; i++) await lp.sftStep({ ...batch, promptTargets: [[2, 3, 4], [2, 3, 4]], lr: 3e-3 });
  const after = await lpOf();
  t.true(after > before + 1, `log p(5 6 7 | BOS 9): ${before.toFixed(2)} → ${after.toFixed(2)}`);
  const e = await t.throwsAsync(lp.sftStep({ ...batch, promptTargets: [[0], [2]] }), { instanceOf: LearnerOpError });
  t.regex(e!.message, /prompt_targets\[0\] must list positions in \[1, 6\)/);
  const e2 = await t.throwsAsync(lp.sftStep({ ...batch, promptTargets: [[2]] }), { instanceOf: LearnerOpError });
  t.regex(e2!.message, /one list of positions per prompt/);
});

test.serial('learner - a GRPO step with hand-set rewards moves the rewarded completion up and the other down', async (t) => {
  await lp.init({ config: CONFIG, seed: 3 });
  const prompt = [BOS, 5, 6, 7];
  const good = [5, 6, 7, EOS];
  const bad = [9, 9, 9, EOS];
  const batch = { prompts: [prompt, prompt], completions: [good, bad] };
  const before = (await lp.logprobs(batch)).logprobs.map(sum);
  const r = await lp.grpoStep({ ...batch, rewards: [1, 0], groupIds: [0, 0], config: { updateIters: 3, lr: 1e-2 } });
  t.is(r.iters.length, 3);
  t.is(r.tokens, 8);
  t.true(Math.abs(r.advantages[0]! - 0.7071057811) < 1e-6);
  t.true(Math.abs(r.iters[0]!.ratioMean - 1) < 1e-5, 'on-policy: ratio 1 on the first iteration');
  const after = (await lp.logprobs(batch)).logprobs.map(sum);
  t.true(after[0]! > before[0]!, `rewarded: ${before[0]} → ${after[0]}`);
  t.true(after[1]! < before[1]!, `unrewarded: ${before[1]} → ${after[1]}`);
});

test.serial('learner - GRPO with equal rewards: zero advantage; the k3 KL to the reference is 0 there and > 0 once the policy moved', async (t) => {
  await lp.init({ config: CONFIG, seed: 3 });
  await lp.setReference();
  const b = copyBatch(4, 5, 2);
  const old = (await lp.logprobs(b)).logprobs;
  const at = await lp.grpoStep({ ...b, oldLogprobs: old, rewards: [1, 1, 0, 0], groupIds: ['a', 'a', 'b', 'b'], config: { klCoef: 0.1 } });
  t.deepEqual(at.advantages, [0, 0, 0, 0]);
  t.true(Math.abs(at.iters[0]!.kl) < 1e-6);
  t.true(Math.abs(at.iters[0]!.pgLoss) < 1e-9);
  // move away from the reference, then only the KL term acts and pulls back
  for (let i = 0; i < 5; i++) await lp.sftStep({ ...b, lr: 3e-3 });
  const moved = await lp.grpoStep({ ...b, rewards: [1, 1, 0, 0], groupIds: ['a', 'a', 'b', 'b'], config: { klCoef: 1, updateIters: 3, lr: 3e-3 } });
  t.true(moved.iters[0]!.kl > 1e-3, `kl ${moved.iters[0]!.kl}`);
  t.true(moved.iters[2]!.kl < moved.iters[0]!.kl, `kl ${moved.iters.map((x) => x.kl).join(' → ')}`);
  t.is(moved.iters[0]!.loss, moved.iters[0]!.pgLoss + moved.iters[0]!.kl);
});

test.serial('learner - same seed and same steps give the same losses and log-probs (deterministic on the CPU)', async (t) => {
  const b = copyBatch(16, 5, 4);
  const run = async (): Promise<number[]> => {
    await lp.init({ config: CONFIG, seed: 11 });
    const out: number[] = [];
    for (let i = 0; i < 3; i++) out.push((await lp.sftStep({ ...b, lr: 1e-3 })).loss);
    out.push(...(await lp.logprobs(b)).logprobs.flat());
    return out;
  };
  t.deepEqual(await run(), await run());
});

test.serial('learner - save/load round trip restores weights, optimizer and step; the next step is the same', async (t) => {
  await lp.init({ config: CONFIG, seed: 5 });
  const b = copyBatch(16, 5, 6);
  await lp.sftStep({ ...b, lr: 1e-3 });
  const path = join(dir, 'rt.pt');
  const saved = await lp.save({ path });
  t.is(saved.step, 1);
  const ref = (await lp.logprobs(b)).logprobs;
  const next = await lp.sftStep({ ...b, lr: 1e-3 });
  const info = await lp.load({ path });
  t.is(info.step, 1);
  t.deepEqual((await lp.logprobs(b)).logprobs, ref);
  t.is((await lp.sftStep({ ...b, lr: 1e-3 })).loss, next.loss);
});

test.serial('learner - a corrupt checkpoint is a LEARNER_CHECKPOINT error and the learner keeps its state', async (t) => {
  await lp.init({ config: CONFIG, seed: 5 });
  const b = copyBatch(4, 5, 6);
  const ref = (await lp.logprobs(b)).logprobs;
  const bad = join(dir, 'bad.pt');
  writeFileSync(bad, 'not a checkpoint');
  const e = await t.throwsAsync(lp.load({ path: bad }), { instanceOf: LearnerOpError });
  t.is(e!.code, 'LEARNER_CHECKPOINT');
  t.regex(e!.message, /load failed: CheckpointError: checkpoint .*bad\.pt is corrupt/);
  const missing = await t.throwsAsync(lp.load({ path: join(dir, 'nope.pt') }), { instanceOf: LearnerOpError });
  t.regex(missing!.message, /no checkpoint file/);
  t.deepEqual((await lp.logprobs(b)).logprobs, ref);
});

test.serial('learner - a bad request names the field and carries the python traceback', async (t) => {
  await lp.init({ config: CONFIG, seed: 5 });
  const e = await t.throwsAsync(lp.sftStep({ prompts: [[BOS, 99]], completions: [[3]] }), { instanceOf: LearnerOpError });
  t.is(e!.code, 'LEARNER_OP');
  t.is(e!.op, 'sft_step');
  t.regex(e!.message, /token 99 at sequence 0, position 1 is not an id in \[0, 16\)/);
  t.regex(e!.remoteStack ?? '', /Traceback/);
  const long = await t.throwsAsync(lp.sftStep({ prompts: [[BOS, ...Array(40).fill(3)]], completions: [[3]] }));
  t.regex(long!.message, /more than config.max_len=32/);
  const e2 = await t.throwsAsync(lp.init({ config: { ...CONFIG, dModel: 30 }, seed: 1 }));
  t.regex(e2!.message, /d_model \(30\) must be divisible by config.n_heads \(4\)/);
  const e3 = await t.throwsAsync(lp.grpoStep({ prompts: [[BOS]], completions: [[3]], rewards: [1], groupIds: [0], config: { klCoef: 0.1 } }));
  t.regex(e3!.message, /kl_coef > 0 needs a reference policy/);
});

test('learner - a python without torch fails with LearnerDependencyError naming the apt packages', async (t) => {
  // -S hides the site (dist-packages) directories, as a python without Debian's packages would be
  const e = await t.throwsAsync(LearnerProcess.start({ pythonArgs: ['-S'] }), { instanceOf: LearnerDependencyError });
  t.is(e!.code, 'LEARNER_DEPENDENCY');
  t.true(e!.missing.includes('torch'));
  t.regex(e!.message, /cannot import torch/);
  t.regex(e!.message, /apt-get install -y python3-torch .*libopenblas0-pthread/);
});

test('learner - a missing python binary fails with LearnerDependencyError', async (t) => {
  const e = await t.throwsAsync(LearnerProcess.start({ python: '/nonexistent/python3' }), { instanceOf: LearnerDependencyError });
  t.regex(e!.message, /\/nonexistent\/python3 not found/);
});
