import test from 'ava';
import { rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Learner } from '../../../actors/learner.ts';
import { EngineerSampler, registerGrammar } from '../../../actors/sampler.ts';
import { Hr1Error } from '../../../cluster/errors.ts';
import { init, type Runtime } from '../../../cluster/init.ts';
import { BOS, CONFIG, EOS, copyBatch, sum } from './toy.ts';

let rt: Runtime;
test.before(async () => {
  rt = await init({ inProcess: true });
});
test.after.always(async () => rt?.shutdown());

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

test.serial('actors - the learner exports after each update into the object store and a sampler loads it by name', async (t) => {
  const learner = await rt.cluster.spawn(Learner, { model: CONFIG, seed: 1, device: 'cpu', keepExports: 2 });
  const first = await learner.info(null);
  t.is(first.lastOnnx?.name, 'engineer/step-0.onnx');
  const b = copyBatch(16, 6, 1);
  let last;
  for (let i = 0; i < 3; i++) last = await learner.sftStep({ ...b, lr: 3e-3 });
  t.is(last!.onnx?.name, 'engineer/step-3.onnx');
  const names = (await rt.cluster.objects.list()).map((o) => o.name).filter((n) => n.startsWith('engineer/'));
  t.deepEqual(names, ['engineer/step-2.onnx', 'engineer/step-3.onnx'], 'older exports are deleted (keepExports 2)');

  const sampler = await rt.cluster.spawn(EngineerSampler, { eosId: EOS, maxLen: CONFIG.maxLen!, model: { object: last!.onnx!.name } });
  const out = await sampler.sample({ prompts: b.prompts.slice(0, 2), k: 4, temperature: 0.7, topP: 0.95, maxNewTokens: 8, seed: 3 });
  t.is(out.completions.length, 2);
  t.is(out.completions[0]!.length, 4);
  t.is(out.source, 'object:engineer/step-3.onnx');
  // the sampler's log-probs are what the learner computes for the same tokens
  const c = out.completions[0]!;
  const torch = await learner.logprobs({ prompts: c.map(() => b.prompts[0]!), completions: c.map((x) => x.ids), temperature: 0.7 });
  t.true(Math.max(...torch.logprobs.flatMap((row, i) => row.map((x, j) => Math.abs(x - c[i]!.logprobs[j]!)))) < 1e-4);

  // a GRPO step on the samples with hand-set rewards raises the rewarded one
  const g = await learner.grpoStep({ prompts: c.map(() => b.prompts[0]!), completions: c.map((x) => x.ids), oldLogprobs: c.map((x) => x.logprobs), rewards: [1, 0, 0, 0], groupIds: [0, 0, 0, 0], config: { temperature: 0.7, updateIters: 2, lr: 5e-3 } });
  t.is(g.onnx?.name, 'engineer/step-5.onnx');
  const after = await learner.logprobs({ prompts: [b.prompts[0]!], completions: [c[0]!.ids], temperature: 0.7 });
  t.true(sum(after.logprobs[0]!) > sum(c[0]!.logprobs));
  await sampler.load({ object: g.onnx!.name });
  t.is((await sampler.info(null)).source, 'object:engineer/step-5.onnx');
  await rt.cluster.kill(sampler);
  await rt.cluster.kill(learner);
});

test.serial('actors - a learner process killed mid-op fails that op with LEARNER_DIED naming it, restarts from the last checkpoint and keeps serving', async (t) => {
  const learner = await rt.cluster.spawn(Learner, { model: CONFIG, seed: 2, device: 'cpu', objectPrefix: 'eng2' });
  const b = copyBatch(16, 6, 2);
  await learner.sftStep({ ...b, lr: 3e-3 });
  const before = await learner.info(null);
  const ref = await learner.logprobs(b);
  const big = copyBatch(64, 12, 3);
  const pending = learner.grpoStep({ ...big, rewards: big.prompts.map((_, i) => i % 2), groupIds: big.prompts.map((_, i) => i % 4), config: { updateIters: 64 } });
  await sleep(300);
  process.kill(before.pid, 'SIGKILL');
  const e = await t.throwsAsync(pending);
  t.true(e instanceof Hr1Error);
  t.is((e as Hr1Error).code, 'LEARNER_DIED');
  t.regex(e!.message, /died during grpo_step \(signal SIGKILL\)/);
  t.is((e as Hr1Error).data?.['op'], 'grpo_step');

  const after = await learner.info(null);
  t.is(after.restarts, 1);
  t.not(after.pid, before.pid);
  t.is(after.step, before.step, 'restored from the checkpoint of the last completed update');
  t.regex(after.lastDeath ?? '', /grpo_step/);
  t.deepEqual((await learner.logprobs(b)).logprobs, ref.logprobs);
  const next = await learner.sftStep({ ...b, lr: 3e-3 });
  t.is(next.step, before.step + 1);

  // a death while idle is noticed and repaired before the next op
  process.kill(after.pid, 'SIGKILL');
  await sleep(200);
  const again = await learner.info(null);
  t.is(again.restarts, 2);
  t.is(again.step, next.step);

  // a new learner resumes from a saved checkpoint
  const saved = await learner.save({ path: join(tmpdir(), `hr1-resume-${process.pid}.pt`) });
  await rt.cluster.kill(learner);
  const resumed = await rt.cluster.spawn(Learner, { model: CONFIG, resume: saved.path, device: 'cpu', objectPrefix: 'eng2r' });
  const ri = await resumed.info(null);
  t.is(ri.step, next.step);
  t.is(ri.lastOnnx?.name, `eng2r/step-${next.step}.onnx`);
  await rt.cluster.kill(resumed);
  rmSync(saved.path, { force: true });
});

test.serial('actors - the sampler applies a registered grammar and refuses an unknown one', async (t) => {
  registerGrammar('test-sevens', (prefix) => (prefix.length >= 2 ? [EOS] : [7]));
  const learner = await rt.cluster.spawn(Learner, { model: CONFIG, seed: 3, device: 'cpu', objectPrefix: 'eng3' });
  const name = (await learner.export({ name: 'eng3/pinned.onnx' })).name;
  const sampler = await rt.cluster.spawn(EngineerSampler, { eosId: EOS, maxLen: CONFIG.maxLen!, grammar: 'test-sevens', model: { object: name } });
  const out = await sampler.sample({ prompts: [[BOS, 4]], k: 3, seed: 1 });
  for (const c of out.completions[0]!) t.deepEqual(c.ids, [7, 7, EOS]);
  const e = await t.throwsAsync(rt.cluster.spawn(EngineerSampler, { eosId: EOS, maxLen: 32, grammar: 'nope' }));
  t.regex(e!.message, /no grammar constraint named "nope"/);
  const empty = await rt.cluster.spawn(EngineerSampler, { eosId: EOS, maxLen: 32 });
  await t.throwsAsync(empty.sample({ prompts: [[BOS]] }), { message: /no model loaded/ });
  await t.throwsAsync(empty.load({ object: 'eng3/none.onnx' }), { message: /no object "eng3\/none.onnx"/ });
  for (const h of [sampler, empty, learner]) await rt.cluster.kill(h);
});
