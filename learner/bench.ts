/**
 * Learner/sampler timings on this machine: `node --import=tsx learner/bench.ts`.
 * Sizes follow the GRPO defaults (10 tasks × K 8 = 80 samples); figures are medians.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Rng } from '../cluster/rng.ts';
import { LearnerProcess, OnnxEngineer } from './index.ts';

const V = Number(process.env['BENCH_VOCAB'] ?? 512);
const P = 128;
const C = 64;
const rng = new Rng(1);
const seq = (n: number) => Array.from({ length: n }, () => 3 + rng.int(V - 3));
const batch = (n: number) => ({ prompts: Array.from({ length: n }, () => [1, ...seq(P - 1)]), completions: Array.from({ length: n }, () => [...seq(C - 1), 2]) });
const median = (xs: number[]) => xs.slice().sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
async function time(n: number, f: () => Promise<unknown>): Promise<number> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    await f();
    out.push(performance.now() - t0);
  }
  return median(out);
}

const dir = mkdtempSync(join(tmpdir(), 'hr1-bench-'));
const lp = await LearnerProcess.start();
const info = await lp.init({ config: { vocabSize: V, dModel: 128, nLayers: 2, nHeads: 4, dFf: 512, maxLen: 256 }, seed: 1 });
const rows: [string, number][] = [];
const sft = batch(32);
rows.push([`sft_step 32×${P + C} tokens`, await time(5, () => lp.sftStep(sft))]);
const g = batch(80);
const grpo = { ...g, rewards: g.prompts.map((_, i) => i % 3), groupIds: g.prompts.map((_, i) => Math.floor(i / 8)) };
rows.push([`grpo_step 80×${P + C}, 1 iter`, await time(3, () => lp.grpoStep(grpo))]);
rows.push([`grpo_step 80×${P + C}, 2 iters`, await time(3, () => lp.grpoStep({ ...grpo, config: { updateIters: 2 } }))]);
rows.push([`logprobs 80×${P + C}`, await time(3, () => lp.logprobs(g))]);
const path = join(dir, 'm.onnx');
rows.push(['export (ONNX, opset 17)', await time(3, () => lp.export({ path }))]);
rows.push(['save checkpoint', await time(3, () => lp.save({ path: join(dir, 'c.pt') }))]);
const eng = await OnnxEngineer.fromPath(path, { eosId: 2, maxLen: 256 });
rows.push(['ORT forward 1×64', await time(20, () => eng.logits([seq(64)]))]);
rows.push([`ORT forward 8×${P + C}`, await time(10, () => eng.logits(Array.from({ length: 8 }, () => seq(P + C))))]);
const prompt = [1, ...seq(P - 1)];
// a constraint that forbids EOS makes every sample run the full length
const noEos = () => Array.from({ length: V - 3 }, (_, i) => i + 3);
rows.push([`sample K=8, prompt ${P}, ${C} new tokens`, await time(3, () => eng.sample([prompt], { k: 8, maxNewTokens: C, seed: 1, constraint: noEos }))]);
rows.push([`sample K=8, prompt ${P}, 16 new tokens`, await time(3, () => eng.sample([prompt], { k: 8, maxNewTokens: 16, seed: 1, constraint: noEos }))]);
rows.push([`sample 16 prompts × K=8, ${C} new tokens`, await time(2, () => eng.sample(Array.from({ length: 16 }, (_, i) => [1, ...seq(P - 1 - i)]), { k: 8, maxNewTokens: C, seed: 1, constraint: noEos }))]);
// the path before the cache: a full graph, one forward over the window per token
const fullPath = join(dir, 'full.onnx');
await lp.export({ path: fullPath, graph: 'full' });
const full = await OnnxEngineer.fromPath(fullPath, { eosId: 2, maxLen: 256 });
rows.push([`full graph: sample K=8, prompt ${P}, ${C} new tokens`, await time(2, () => full.sample([prompt], { k: 8, maxNewTokens: C, seed: 1, constraint: noEos }))]);
rows.push([`full graph: sample K=8, prompt ${P}, 16 new tokens`, await time(3, () => full.sample([prompt], { k: 8, maxNewTokens: 16, seed: 1, constraint: noEos }))]);
await full.release();
await eng.release();
await lp.close();
rmSync(dir, { recursive: true, force: true });
console.log(`learner bench: vocab ${V}, d_model 128, 2 layers, 4 heads, ${info.params} params, torch ${info.torch} on ${info.device} (${info.threads} thread)`);
for (const [k, v] of rows) console.log(`${k.padEnd(40)} ${v.toFixed(1)} ms`);
