/**
 * `hr1 bench lm`: a learned target's decisions per second, in one run with the contenders
 * interleaved (round-robin slices, so a change in the machine's load hits all of them):
 *
 * - (a) the path before the cache: the full graph, one forward over the whole window per token,
 *   one decision at a time;
 * - (b) the key/value-cache decode graph, one decision at a time (batcher of 1);
 * - (c) the cache and the decision batcher with 16 and 64 decisions in flight (the defaults);
 * - (d) the bound: the model's FLOPs per decision (causal attention, logits of the decoded
 *   positions only) against this machine's ORT throughput on one large batched forward.
 *
 * The decisions are real: the windows of episodes the target plays on its env's eval split.
 * Every contender decodes the same decisions with the same seeds; the cache paths must agree
 * token for token (or the bench fails), and the full path's differences are counted.
 */
import { readFileSync, rmSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Rng, hashString } from '../../cluster/rng.ts';
import { runEpisodes } from '../../actors/target.ts';
import { baseHarness, type DecisionContext, type Model } from '../../harness/index.ts';
import { DecodeBatcher, DEFAULT_GATHER_MS, DEFAULT_MAX_BATCH, type Sample } from '../../learner/batcher.ts';
import { Graph } from '../../learner/graph.ts';
import { sampleFullPath } from '../../learner/onnx.ts';
import { LearnerProcess } from '../../learner/process.ts';
import { EVAL_SPLIT, taskIds, type LmEnv } from '../../policies/targets/lm/bc.ts';
import { lmModel, type LmModel } from '../../policies/targets/lm/model.ts';
import { ZOO, modelDir, resolveConfig, type LmMeta } from '../../policies/targets/lm/zoo.ts';
import { ensureLmTargets } from '../exp/common.ts';
import { table } from '../commands/table.ts';

export interface BenchLmOptions {
  /** @default 'lm/alf-m-256-a' */
  target: string;
  /** timed seconds in all, shared by the contenders. @default 24 */
  seconds: number;
  /** episodes whose decisions are replayed. @default 16 */
  episodes: number;
  /** interleaved rounds. @default 3 */
  rounds: number;
  json: boolean;
  /** also time a grid of batch caps and gathering windows (how the defaults were chosen) */
  sweep?: boolean;
  /** skip the 64-in-flight memory check on the largest zoo model's shape */
  memory?: boolean;
  log?: (l: string) => void;
}

export interface BenchLmResult {
  target: string;
  decisions: number;
  mean_prompt_tokens: number;
  mean_new_tokens: number;
  baseline_decisions_per_s: number;
  kv_decisions_per_s: number;
  batched16_decisions_per_s: number;
  batched64_decisions_per_s: number;
  batched_decisions_per_s: number;
  speedup: number;
  kv_speedup: number;
  bound_decisions_per_s: number;
  ratio_to_bound: number;
  ort_gflops: number;
  mflop_per_decision: number;
  tokens_per_s: { baseline: number; kv: number; batched16: number; batched64: number };
  mean_rows_per_step: { batched16: number; batched64: number };
  /** decisions whose tokens differ between the full path and the cache (float sums in the last bits) */
  full_vs_cache_differ: number;
  kv_bytes_per_episode: number;
  largest?: { model: string; kv_bytes_per_episode: number; in_flight: number; rss_mib_before: number; rss_mib_peak: number; kv_mib: number };
  defaults: { maxBatch: number; gatherMs: number };
  sweep?: { streams: number; maxBatch: number; gatherMs: number; decisions_per_s: number }[];
}

interface Decision {
  prompt: number[];
  seed: number;
}

/** FLOPs of the dense part of one token through the model (multiply-add = 2). */
function denseFlops(c: LmMeta['config']): number {
  return c.nLayers * (8 * c.dModel * c.dModel + 4 * c.dModel * c.dFf);
}

/** The minimal FLOPs of one decision: prefill of the prompt, a step per fed-back token, causal attention, logits only where decoded. */
export function decisionFlops(c: LmMeta['config'], vocab: number, promptLen: number, generated: number): number {
  const dense = denseFlops(c);
  const attn = (keys: number): number => c.nLayers * 4 * c.dModel * keys;
  let f = 0;
  for (let p = 0; p < promptLen + Math.max(0, generated - 1); p++) f += dense + attn(p + 1);
  return f + generated * 2 * c.dModel * vocab;
}

/** FLOPs a full graph computes on [b, t]: dense, unmasked attention, logits at every position. */
function forwardFlops(c: LmMeta['config'], vocab: number, b: number, t: number): number {
  return b * t * (denseFlops(c) + c.nLayers * 4 * c.dModel * t + 2 * c.dModel * vocab);
}

const rssMiB = (): number => process.memoryUsage().rss / 2 ** 20;

async function record(m: LmModel, env: LmEnv, episodes: number): Promise<{ decisions: Decision[]; steps: number; episodes: number }> {
  const seen: Decision[] = [];
  const recorder: Model = {
    name: m.name,
    decide: (ctx: DecisionContext) => {
      seen.push({ prompt: m.window(ctx), seed: hashString(`${ctx.seed}:${ctx.step}:${ctx.messages.length}`) });
      return m.decide(ctx);
    },
  };
  const eps = taskIds(env, EVAL_SPLIT[env]).slice(0, episodes).map((taskId) => ({ taskId, seed: 1 }));
  const records = await runEpisodes(env, {}, baseHarness(), recorder, eps, 16);
  // in a fixed order (the episodes ran concurrently)
  const decisions = [...seen].sort((a, b) => a.seed - b.seed || a.prompt.length - b.prompt.length || a.prompt.join(',').localeCompare(b.prompt.join(',')));
  return { decisions, steps: records.reduce((a, r) => a + r.steps.length, 0), episodes: records.length };
}

type Decode = (d: Decision) => Promise<Sample>;

/** Decode decisions from a shared cursor with `streams` at once until `ms` have passed. */
async function runFor(ms: number, streams: number, decode: Decode, ds: readonly Decision[], cursor: { at: number }): Promise<{ decisions: number; tokens: number; ms: number }> {
  const t0 = performance.now();
  const deadline = t0 + ms;
  let decisions = 0;
  let tokens = 0;
  await Promise.all(
    Array.from({ length: streams }, async () => {
      while (performance.now() < deadline) {
        const d = ds[cursor.at++ % ds.length]!;
        const s = await decode(d);
        decisions++;
        tokens += s.ids.length;
      }
    }),
  );
  return { decisions, tokens, ms: performance.now() - t0 };
}

export async function benchLm(o: BenchLmOptions): Promise<BenchLmResult> {
  const say = o.json ? (l: string) => process.stderr.write(`${l}\n`) : (o.log ?? console.log);
  if (!o.target.startsWith('lm/')) throw new Error(`--target must be a learned target lm/NAME, got ${o.target}`);
  const name = o.target.slice(3);
  await ensureLmTargets([o.target], say);
  const m = await lmModel(name);
  const meta = m.meta;
  const env = meta.config.envs[0]!;
  const { temperature, topP, maxNewTokens } = m.sampling;
  say(`bench lm: ${m.name} (${meta.params.toLocaleString()} params, d ${meta.config.dModel} × ${meta.config.nLayers} layers, context ${meta.maxLen}, vocabulary ${meta.vocabSize}), ${env}`);
  const rec = await record(m, env, o.episodes);
  await m.release();
  const ds = rec.decisions;
  say(`recorded ${ds.length} decisions of ${rec.episodes} ${env} episodes (eval split, seed 1)`);

  // the full graph (the path before the cache), exported from the same checkpoint
  const tmp = mkdtempSync(join(tmpdir(), 'hr1-bench-lm-'));
  let full: Graph;
  let dec: Graph;
  try {
    const lp = await LearnerProcess.start();
    try {
      await lp.load({ path: join(modelDir(resolveConfig(name)), 'model.pt'), device: 'cpu' });
      await lp.export({ path: join(tmp, 'full.onnx'), graph: 'full' });
    } finally {
      await lp.close();
    }
    const expect = { maxLen: meta.maxLen, vocabSize: meta.vocabSize };
    full = await Graph.load(readFileSync(join(tmp, 'full.onnx')), expect, 'the full graph');
    dec = await Graph.load(readFileSync(m.file), expect, m.file);
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
  const em = { eosId: meta.eosId, maxLen: meta.maxLen };
  const req = (d: Decision) => ({ prompt: d.prompt, k: 1, rng: new Rng(d.seed).fork(0), temperature, topP, maxNewTokens });
  const viaFull: Decode = async (d) => (await sampleFullPath(full, em, [d.prompt], { k: 1, temperature, topP, maxNewTokens, seed: d.seed }))[0]![0]!;
  const kv1 = new DecodeBatcher(dec, { eosId: meta.eosId, maxBatch: 1, gatherMs: 0 });
  const viaKv1: Decode = async (d) => (await kv1.decode(req(d)))[0]!;
  const batched = new DecodeBatcher(dec, { eosId: meta.eosId });
  const viaBatch: Decode = async (d) => (await batched.decode(req(d)))[0]!;

  // the same decisions give the same tokens on every cache path (and nearly all on the full path)
  const check = ds.slice(0, Math.min(ds.length, 256));
  const a = await Promise.all(check.map(viaBatch));
  const b: Sample[] = [];
  for (const d of check) b.push(await viaKv1(d));
  if (JSON.stringify(a) !== JSON.stringify(b)) throw new Error('bench lm: the batched decisions differ from the decisions decoded alone; this is a bug (the batcher must not change a token)');
  let differ = 0;
  for (let i = 0; i < check.length; i++) if (JSON.stringify((await viaFull(check[i]!)).ids) !== JSON.stringify(b[i]!.ids)) differ++;
  const newTokens = b.reduce((s, x) => s + x.ids.length, 0) / b.length;
  const promptTokens = ds.reduce((s, d) => s + d.prompt.length, 0) / ds.length;
  say(`checked ${check.length} decisions: batched = alone token for token; the full path differs on ${differ} (float sums in the last bits); mean window ${promptTokens.toFixed(0)} tokens, ${newTokens.toFixed(2)} new tokens per decision`);

  // (d) the bound: ORT's throughput on one large batched forward, and FLOPs per decision
  const big = Array.from({ length: 16 }, (_, i) => ds[i % ds.length]!.prompt.concat(Array(meta.maxLen).fill(3)).slice(0, meta.maxLen));
  await full.logits(big);
  let bestMs = Infinity;
  for (let i = 0; i < 5; i++) {
    const t0 = performance.now();
    await full.logits(big);
    bestMs = Math.min(bestMs, performance.now() - t0);
  }
  const gflops = forwardFlops(meta.config, meta.vocabSize, 16, meta.maxLen) / (bestMs / 1000) / 1e9;
  const flopsPer = check.reduce((s, d, i) => s + decisionFlops(meta.config, meta.vocabSize, d.prompt.length, b[i]!.ids.length), 0) / check.length;
  const bound = (gflops * 1e9) / flopsPer;

  // interleaved contenders
  const contenders: { key: 'baseline' | 'kv' | 'batched16' | 'batched64'; what: string; streams: number; decode: Decode }[] = [
    { key: 'baseline', what: '(a) full graph, a forward per token, one decision at a time', streams: 1, decode: viaFull },
    { key: 'kv', what: '(b) key/value cache, one decision at a time', streams: 1, decode: viaKv1 },
    { key: 'batched16', what: `(c) cache + batcher, 16 in flight (cap ${batched.maxBatch}, gather ${batched.gatherMs} ms)`, streams: 16, decode: viaBatch },
    { key: 'batched64', what: `(c) cache + batcher, 64 in flight (cap ${batched.maxBatch}, gather ${batched.gatherMs} ms)`, streams: 64, decode: viaBatch },
  ];
  const acc = new Map(contenders.map((c) => [c.key, { decisions: 0, tokens: 0, ms: 0, stepRows: 0, stepCalls: 0 }]));
  const slice = (o.seconds * 1000) / (o.rounds * contenders.length);
  const cursor = { at: 0 };
  for (const c of contenders) await runFor(Math.min(300, slice / 4), c.streams, c.decode, ds, cursor);
  for (let r = 0; r < o.rounds; r++) {
    for (const c of contenders) {
      const s0 = { ...batched.stats };
      const x = await runFor(slice, c.streams, c.decode, ds, cursor);
      const t = acc.get(c.key)!;
      t.decisions += x.decisions;
      t.tokens += x.tokens;
      t.ms += x.ms;
      t.stepRows += batched.stats.stepRows - s0.stepRows;
      t.stepCalls += batched.stats.stepCalls - s0.stepCalls;
    }
    say(`round ${r + 1}/${o.rounds} done`);
  }
  const rate = (k: string): number => (acc.get(k as 'kv')!.decisions / acc.get(k as 'kv')!.ms) * 1000;
  const tps = (k: string): number => (acc.get(k as 'kv')!.tokens / acc.get(k as 'kv')!.ms) * 1000;
  const rows = (k: string): number => acc.get(k as 'kv')!.stepRows / Math.max(1, acc.get(k as 'kv')!.stepCalls);

  let sweep: BenchLmResult['sweep'];
  if (o.sweep) {
    sweep = [];
    for (const streams of [16, 64]) {
      for (const maxBatch of [8, 16, 32, 64]) {
        for (const gatherMs of [0, 1, 2]) {
          const bb = new DecodeBatcher(dec, { eosId: meta.eosId, maxBatch, gatherMs });
          const x = await runFor(Math.max(500, slice / 2), streams, async (d) => (await bb.decode(req(d)))[0]!, ds, cursor);
          sweep.push({ streams, maxBatch, gatherMs, decisions_per_s: (x.decisions / x.ms) * 1000 });
        }
      }
    }
  }

  let largest: BenchLmResult['largest'];
  if (o.memory !== false) largest = await memoryCheck(meta.vocabSize);

  await full.release();
  await dec.release();
  const base = rate('baseline');
  const best = Math.max(rate('batched16'), rate('batched64'));
  const result: BenchLmResult = {
    target: m.name,
    decisions: ds.length,
    mean_prompt_tokens: promptTokens,
    mean_new_tokens: newTokens,
    baseline_decisions_per_s: base,
    kv_decisions_per_s: rate('kv'),
    batched16_decisions_per_s: rate('batched16'),
    batched64_decisions_per_s: rate('batched64'),
    batched_decisions_per_s: best,
    speedup: best / base,
    kv_speedup: rate('kv') / base,
    bound_decisions_per_s: bound,
    ratio_to_bound: best / bound,
    ort_gflops: gflops,
    mflop_per_decision: flopsPer / 1e6,
    tokens_per_s: { baseline: tps('baseline'), kv: tps('kv'), batched16: tps('batched16'), batched64: tps('batched64') },
    mean_rows_per_step: { batched16: rows('batched16'), batched64: rows('batched64') },
    full_vs_cache_differ: differ,
    kv_bytes_per_episode: batched.bytesPerRow,
    ...(largest ? { largest } : {}),
    defaults: { maxBatch: DEFAULT_MAX_BATCH, gatherMs: DEFAULT_GATHER_MS },
    ...(sweep ? { sweep } : {}),
  };
  if (o.json) {
    console.log(JSON.stringify(result));
    return result;
  }
  const f = (x: number, d = 0): string => x.toFixed(d);
  const trows: (string | number)[][] = contenders.map((c) => [c.what, f(rate(c.key)), f(tps(c.key)), f(1000 / rate(c.key), 2), c.key.startsWith('batched') ? f(rows(c.key), 1) : '1', f(rate(c.key) / base, 2), f(rate(c.key) / bound, 2)]);
  trows.push([`(d) bound: ${f(flopsPer / 1e6, 1)} MFLOP per decision at ${f(gflops)} GFLOP/s (ORT, one [16, ${meta.maxLen}] forward)`, f(bound), '-', f(1000 / bound, 2), '-', f(bound / base, 2), '1.00']);
  say(table(['contender', 'decisions/s', 'tokens/s', 'ms/decision', 'rows/step', '× (a)', '÷ bound'], trows));
  if (sweep) say(`\nsweep (decisions/s):\n${table(['in flight', 'cap', 'gather ms', 'decisions/s'], sweep.map((s) => [s.streams, s.maxBatch, s.gatherMs, f(s.decisions_per_s)]))}`);
  say(`\nkey/value cache: ${f(batched.bytesPerRow / 1024)} KiB per episode in flight (${meta.config.nLayers} layers × keys and values × ${meta.maxLen} positions × ${meta.config.dModel} floats)`);
  if (largest) say(`largest zoo model (${largest.model}, its shapes): ${f(largest.kv_bytes_per_episode / 1024)} KiB per episode; ${largest.in_flight} in flight: cache ${f(largest.kv_mib, 1)} MiB, process RSS ${f(largest.rss_mib_before)} → ${f(largest.rss_mib_peak)} MiB (${largest.rss_mib_peak < 1024 ? 'under' : 'NOT under'} 1 GiB)`);
  say(`\ngoal: speedup ≥ 5× over (a): ${f(best / base, 2)}× (${best / base >= 5 ? 'met' : 'NOT met'}); batched ≥ 0.5 of the bound: ${f(best / bound, 2)} (${best / bound >= 0.5 ? 'met' : 'NOT met'})`);
  return result;
}

/** 64 decisions in flight on a model of the largest zoo config's shapes (untrained weights): the cache and the process's memory. */
async function memoryCheck(vocab: number): Promise<NonNullable<BenchLmResult['largest']>> {
  const c = [...ZOO].map((z) => resolveConfig(z.name)).sort((x, y) => y.nLayers * y.dModel * y.maxLen - x.nLayers * x.dModel * x.maxLen)[0]!;
  const tmp = mkdtempSync(join(tmpdir(), 'hr1-bench-lm-mem-'));
  try {
    const lp = await LearnerProcess.start();
    try {
      await lp.init({ config: { vocabSize: vocab, dModel: c.dModel, nLayers: c.nLayers, nHeads: c.nHeads, dFf: c.dFf, maxLen: c.maxLen, padId: 0, bosId: 1, eosId: 2 }, seed: 1, device: 'cpu' });
      await lp.export({ path: join(tmp, 'l.onnx') });
    } finally {
      await lp.close();
    }
    const before = rssMiB();
    const g = await Graph.load(readFileSync(join(tmp, 'l.onnx')), { maxLen: c.maxLen, vocabSize: vocab });
    const bb = new DecodeBatcher(g, { eosId: 2, maxBatch: 64, gatherMs: 5 });
    let peak = rssMiB();
    const timer = setInterval(() => (peak = Math.max(peak, rssMiB())), 5);
    const rng = new Rng(1);
    // long windows and no EOS (an untrained model): every row holds its slot to the end
    await Promise.all(Array.from({ length: 64 }, (_, i) => bb.decode({ prompt: [1, ...Array.from({ length: c.maxLen - 30 }, () => 3 + rng.int(vocab - 3))], k: 1, rng: new Rng(i), temperature: 1, topP: 1, maxNewTokens: 20, constraint: () => Array.from({ length: vocab - 3 }, (_, j) => j + 3) })));
    clearInterval(timer);
    peak = Math.max(peak, rssMiB());
    const out = { model: `lm/${c.name}`, kv_bytes_per_episode: bb.bytesPerRow, in_flight: bb.stats.peakRows, rss_mib_before: before, rss_mib_peak: peak, kv_mib: bb.cacheBytes / 2 ** 20 };
    await g.release();
    return out;
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}
