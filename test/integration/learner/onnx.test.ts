import test from 'ava';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LearnerProcess, OnnxEngineer, SamplerError } from '../../../learner/index.ts';
import { BOS, CONFIG, EOS, copyBatch } from './toy.ts';

/** ORT (float32 logits, float64 log-softmax) against torch (float32): stated tolerance. */
const PARITY_TOL = 1e-4;

const dir = mkdtempSync(join(tmpdir(), 'hr1-onnx-test-'));
let lp: LearnerProcess;
let eng: OnnxEngineer;
const meta = { eosId: EOS, maxLen: CONFIG.maxLen! };

test.before(async () => {
  lp = await LearnerProcess.start();
  await lp.init({ config: CONFIG, seed: 21 });
  // a little training so the distribution is not uniform
  const b = copyBatch(32, 6, 1);
  for (let i = 0; i < 8; i++) await lp.sftStep({ ...b, lr: 3e-3 });
  const r = await lp.export({ path: join(dir, 'm.onnx') });
  eng = await OnnxEngineer.fromPath(r.path, meta);
});
test.after.always(async () => {
  await eng?.release();
  await lp?.close();
  rmSync(dir, { recursive: true, force: true });
});

const maxDiff = (a: number[][], b: number[][]): number => Math.max(...a.flatMap((row, i) => row.map((x, j) => Math.abs(x - b[i]![j]!))));

test.serial(`onnx - ORT and torch give the same per-token log-probs within ${PARITY_TOL} (uneven lengths, T = 1 and 0.7)`, async (t) => {
  const b = copyBatch(8, 6, 9);
  b.completions[1] = b.completions[1]!.slice(0, 2);
  b.prompts[2] = b.prompts[2]!.slice(0, 1);
  for (const temperature of [1, 0.7]) {
    const torch = (await lp.logprobs({ ...b, temperature })).logprobs;
    const ort = await eng.tokenLogprobs(b.prompts, b.completions, temperature);
    const d = maxDiff(torch, ort);
    t.log(`T=${temperature}: max |Δ logp| = ${d.toExponential(2)}`);
    t.true(d < PARITY_TOL, `max diff ${d}`);
  }
});

test.serial('onnx - sampling gives K completions per prompt with log-probs the learner reproduces', async (t) => {
  const prompts = copyBatch(3, 6, 5).prompts;
  const out = await eng.sample(prompts, { k: 4, temperature: 0.7, topP: 0.95, maxNewTokens: 10, seed: 1 });
  t.is(out.length, 3);
  for (const [pi, ks] of out.entries()) {
    t.is(ks.length, 4);
    for (const c of ks) {
      t.is(c.ids.length, c.logprobs.length);
      t.true(c.ids.length >= 1 && c.ids.length <= 10);
      t.is(c.finished, c.ids.at(-1) === EOS);
      t.true(c.logprobs.every((x) => x <= 0));
    }
    const torch = (await lp.logprobs({ prompts: ks.map(() => prompts[pi]!), completions: ks.map((c) => c.ids), temperature: 0.7 })).logprobs;
    t.true(maxDiff(torch, ks.map((c) => c.logprobs)) < PARITY_TOL);
  }
});

test.serial('onnx - sampling is deterministic per seed and differs across seeds', async (t) => {
  const prompts = copyBatch(2, 6, 5).prompts;
  const o = { k: 6, temperature: 1.5, topP: 1, maxNewTokens: 8 };
  const a = await eng.sample(prompts, { ...o, seed: 4 });
  t.deepEqual(await eng.sample(prompts, { ...o, seed: 4 }), a);
  t.notDeepEqual(await eng.sample(prompts, { ...o, seed: 5 }), a);
});

test.serial('onnx - temperature 0 is greedy: every sample is the argmax path', async (t) => {
  const prompts = copyBatch(1, 6, 5).prompts;
  const [ks] = await eng.sample(prompts, { k: 3, temperature: 0, maxNewTokens: 8, seed: 1 });
  t.deepEqual(ks![1]!.ids, ks![0]!.ids);
  t.deepEqual(ks![2]!.ids, ks![0]!.ids);
});

test.serial('onnx - a tiny top-p keeps only the most likely token (greedy path)', async (t) => {
  const prompts = copyBatch(1, 6, 5).prompts;
  const [greedy] = await eng.sample(prompts, { k: 1, temperature: 0, maxNewTokens: 8 });
  const [nucleus] = await eng.sample(prompts, { k: 4, temperature: 1, topP: 1e-6, maxNewTokens: 8, seed: 9 });
  for (const c of nucleus!) t.deepEqual(c.ids, greedy![0]!.ids);
});

test.serial('onnx - the grammar hook restricts every sampled id; an empty allowed set is a SAMPLER_GRAMMAR error', async (t) => {
  const prompts = [[BOS, 3, 4]];
  const constraint = (prefix: readonly number[]) => (prefix.length >= 3 ? [EOS] : [7, 8]);
  const [ks] = await eng.sample(prompts, { k: 5, temperature: 1, topP: 1, maxNewTokens: 10, seed: 2, constraint });
  for (const c of ks!) {
    t.is(c.ids.length, 4);
    t.true(c.ids.slice(0, 3).every((x) => x === 7 || x === 8));
    t.is(c.ids[3], EOS);
    t.true(c.finished);
  }
  const e = await t.throwsAsync(eng.sample(prompts, { k: 1, constraint: () => [] }), { instanceOf: SamplerError });
  t.is(e!.code, 'SAMPLER_GRAMMAR');
});

test.serial('onnx - generation stops at maxLen; bad inputs and a bad model are typed errors', async (t) => {
  const long = [BOS, ...Array(CONFIG.maxLen! - 3).fill(3)];
  const [ks] = await eng.sample([long], { k: 2, temperature: 1, maxNewTokens: 50, seed: 1, constraint: () => [5] });
  t.is(ks![0]!.ids.length, 2);
  t.false(ks![0]!.finished);
  await t.throwsAsync(eng.sample([[]]), { instanceOf: SamplerError, message: /prompt 0 is empty/ });
  await t.throwsAsync(eng.sample([[BOS]], { topP: 0 }), { message: /options.topP must be in \(0, 1\]/ });
  const junk = join(dir, 'junk.onnx');
  writeFileSync(junk, 'not onnx');
  const e = await t.throwsAsync(OnnxEngineer.fromPath(junk, meta), { instanceOf: SamplerError });
  t.is(e!.code, 'SAMPLER_MODEL');
  await t.throwsAsync(OnnxEngineer.fromPath(join(dir, 'missing.onnx'), meta), { message: /cannot read the engineer ONNX model/ });
});
