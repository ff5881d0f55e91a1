/**
 * The memory check of `hr1 bench lm`, run in a process of its own (so the figure is what a target
 * actor needs, not what the benchmark holds): load a decode graph, keep `inFlight` decisions in
 * flight through the batcher with the prefix cache of an lm target, and print one JSON line with
 * the process's resident memory before loading and at its peak.
 *
 * Usage: node --import tsx experiments/bench/lm-memory.ts MODEL.onnx MAXLEN VOCAB IN_FLIGHT
 */
import { readFileSync } from 'node:fs';
import { Rng } from '../../cluster/rng.ts';
import { DecodeBatcher } from '../../learner/batcher.ts';
import { Graph } from '../../learner/graph.ts';
import { lmBatchOptions } from '../../policies/targets/lm/model.ts';

const [file, maxLenArg, vocabArg, inFlightArg] = process.argv.slice(2);
const maxLen = Number(maxLenArg);
const vocab = Number(vocabArg);
const inFlight = Number(inFlightArg);
const rss = (): number => process.memoryUsage().rss / 2 ** 20;
const before = rss();
const g = await Graph.load(readFileSync(file!), { maxLen, vocabSize: vocab });
const served = lmBatchOptions();
const b = new DecodeBatcher(g, { eosId: 2, ...served, maxBatch: Math.max(served.maxBatch, inFlight) });
let peak = rss();
const timer = setInterval(() => (peak = Math.max(peak, rss())), 2);
const rng = new Rng(1);
// long windows and no EOS (untrained weights, EOS not allowed): every row holds its slot to the
// end, and after three rounds the prefix cache is full
const allowed = Array.from({ length: vocab - 3 }, (_, j) => j + 3);
for (let round = 0; round < 3; round++) {
  await Promise.all(Array.from({ length: inFlight }, (_, i) => b.decode({ prompt: [1, ...Array.from({ length: maxLen - 30 }, () => 3 + rng.int(vocab - 3))], k: 1, rng: new Rng(round * 1000 + i), temperature: 1, topP: 1, maxNewTokens: 20, constraint: () => allowed })));
}
clearInterval(timer);
peak = Math.max(peak, rss());
console.log(JSON.stringify({ rss_mib_before: before, rss_mib_peak: peak, in_flight: b.stats.peakRows, kv_bytes_per_episode: b.bytesPerRow, kv_mib: b.cacheBytes / 2 ** 20 }));
await g.release();
