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
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import { Rng } from '../../cluster/rng.ts';
import { baseHarness, runEpisode, type DecisionContext, type Model } from '../../harness/index.ts';
import { DecodeBatcher, type Sample } from '../../learner/batcher.ts';
import { Graph } from '../../learner/graph.ts';
import { sampleFullPath } from '../../learner/onnx.ts';
import { LearnerProcess } from '../../learner/process.ts';
import { EVAL_SPLIT, envFactory, taskIds, type LmEnv } from '../../policies/targets/lm/bc.ts';
import { DEFAULT_LM_PREFIX_CACHE, decisionSeed, lmBatchOptions, lmModel, type LmModel } from '../../policies/targets/lm/model.ts';
import { ZOO, modelDir, resolveConfig, type LmMeta } from '../../policies/targets/lm/zoo.ts';
import { ensureLmTargets } from '../exp/common.ts';
import { table } from '../commands/table.ts';
import { CommandError } from '../commands/errors.ts';

export interface BenchLmOptions {
  /** @default 'lm/alf-m-256-a' */
  target: string;
  /** timed seconds in all, shared by the contenders. @default 24 */
  seconds: number;
  /** episodes whose decisions are replayed (each stream replays its own). @default 64 */
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
  /** the bound when the prefix shared with the episode's last window is not computed again */
  bound_with_prefix_reuse_decisions_per_s: number;
  ratio_to_bound_with_prefix_reuse: number;
  noprefix64_decisions_per_s: number;
  /** prompt tokens the prefix cache served */
  prefix_cache_share: number;
  ort_gflops: number;
  mflop_per_decision: number;
  tokens_per_s: { baseline: number; kv: number; batched16: number; batched64: number };
  mean_rows_per_step: { batched16: number; batched64: number };
  /** decisions whose tokens differ between the full path and the cache (float sums in the last bits) */
  full_vs_cache_differ: number;
  kv_bytes_per_episode: number;
  largest?: { model: string; kv_bytes_per_episode: number; in_flight: number; rss_mib_before: number; rss_mib_peak: number; kv_mib: number };
  defaults: { maxBatch: number; gatherMs: number; prefixCache: number };
  sweep?: { streams: number; maxBatch: number; gatherMs: number; decisions_per_s: number }[];
}

export interface Decision {
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

/** `n` episodes of the env's eval split: its tasks in order, seed 1, then seed 2, … */
export function lmEpisodes(env: LmEnv, n: number): { taskId: string; seed: number }[] {
  const ids = taskIds(env, EVAL_SPLIT[env]);
  return Array.from({ length: n }, (_, i) => ({ taskId: ids[i % ids.length]!, seed: 1 + Math.floor(i / ids.length) }));
}

export async function recordEpisodes(m: LmModel, env: LmEnv, episodes: number): Promise<{ episodes: Decision[][]; steps: number }> {
  const eps = lmEpisodes(env, episodes);
  const out: Decision[][] = eps.map(() => []);
  let next = 0;
  // 16 at a time through the batched model; each episode's decisions in its own order
  await Promise.all(
    Array.from({ length: Math.min(16, eps.length) }, async () => {
      for (;;) {
        const i = next++;
        if (i >= eps.length) return;
        const mine = out[i]!;
        const recorder: Model = {
          name: m.name,
          decide: (ctx: DecisionContext) => {
            mine.push({ prompt: m.window(ctx), seed: decisionSeed(ctx) });
            return m.decide(ctx);
          },
        };
        await runEpisode(envFactory(env, eps[i]!.taskId), { model: recorder, seed: eps[i]!.seed, harness: baseHarness() });
      }
    }),
  );
  return { episodes: out, steps: out.reduce((a, e) => a + e.length, 0) };
}

export type Decode = (d: Decision) => Promise<Sample>;

/** Where each stream of a contender is: its episode and the next decision in it. */
export interface Streams {
  at: { ep: number; i: number }[];
  next: number;
}

export const streamsOf = (n: number): Streams => ({ at: Array.from({ length: n }, (_, s) => ({ ep: s, i: 0 })), next: n });

/**
 * Replay episodes with `streams` in flight until `ms` have passed: each stream decodes its
 * episode's decisions in order (as a target actor's episodes ask for them), takes the next
 * episode when it is done, and carries on where it stopped in the next slice.
 */
export async function runFor(ms: number, st: Streams, decode: Decode, eps: readonly Decision[][]): Promise<{ decisions: number; tokens: number; ms: number }> {
  const t0 = performance.now();
  const deadline = t0 + ms;
  let decisions = 0;
  let tokens = 0;
  await Promise.all(
    st.at.map(async (pos) => {
      while (performance.now() < deadline) {
        const ep = eps[pos.ep % eps.length]!;
        if (pos.i >= ep.length) {
          pos.ep = st.next++;
          pos.i = 0;
          continue;
        }
        const s = await decode(ep[pos.i++]!);
        decisions++;
        tokens += s.ids.length;
      }
    }),
  );
  return { decisions, tokens, ms: performance.now() - t0 };
}

/** Every decision of every episode once, `streams` episodes at once (each its decisions in order); the ms it took. */
export async function replayAll(streams: number, decode: Decode, eps: readonly Decision[][]): Promise<number> {
  const t0 = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(streams, eps.length) }, async () => {
      for (let e = next++; e < eps.length; e = next++) for (const d of eps[e]!) await decode(d);
    }),
  );
  return performance.now() - t0;
}

export async function benchLm(o: BenchLmOptions): Promise<BenchLmResult> {
  const say = o.json ? (l: string) => process.stderr.write(`${l}\n`) : (o.log ?? console.log);
  if (!o.target.startsWith('lm/')) throw new CommandError('BAD_OPTION', `--target must be a learned target lm/NAME, got ${o.target}`);
  // the 64-in-flight contender replays 64 different episodes at once (the same episode twice would share its prefixes)
  if (o.episodes < 64) throw new CommandError('BAD_OPTION', `--episodes must be at least 64 (64 episodes are replayed at once), got ${o.episodes}`);
  const name = o.target.slice(3);
  await ensureLmTargets([o.target], say);
  const m = await lmModel(name);
  const meta = m.meta;
  const env = meta.config.envs[0]!;
  const { temperature, topP, maxNewTokens } = m.sampling;
  say(`bench lm: ${m.name} (${meta.params.toLocaleString()} params, d ${meta.config.dModel} × ${meta.config.nLayers} layers, context ${meta.maxLen}, vocabulary ${meta.vocabSize}), ${env}`);
  const rec = await recordEpisodes(m, env, o.episodes);
  await m.release();
  const eps = rec.episodes;
  const ds = eps.flat();
  say(`recorded ${ds.length} decisions of ${eps.length} ${env} episodes (eval split)`);

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
  // what an lm target serves with (lmModel's defaults): the batcher and the prefix cache
  const served = lmBatchOptions();
  const batched = new DecodeBatcher(dec, { eosId: meta.eosId, ...served });
  const viaBatch: Decode = async (d) => (await batched.decode(req(d)))[0]!;
  const noPrefix = new DecodeBatcher(dec, { eosId: meta.eosId, ...served, prefixCache: 0 });
  const viaNoPrefix: Decode = async (d) => (await noPrefix.decode(req(d)))[0]!;

  // the same decisions give the same tokens on every cache path (and nearly all on the full path):
  // the first episodes, 16 at a time through the batcher and its prefix cache, against alone from scratch
  const checkEps = eps.slice(0, Math.min(eps.length, 16));
  const check = checkEps.flat();
  const a = (await Promise.all(checkEps.map(async (ep) => {
    const got: Sample[] = [];
    for (const d of ep) got.push(await viaBatch(d));
    return got;
  }))).flat();
  const b: Sample[] = [];
  for (const d of check) b.push(await viaKv1(d));
  if (JSON.stringify(a) !== JSON.stringify(b)) throw new Error('bench lm: the batched decisions differ from the decisions decoded alone; this is a bug (the batcher must not change a token)');
  let differ = 0;
  const fullCheck = check.slice(0, 256);
  for (let i = 0; i < fullCheck.length; i++) if (JSON.stringify((await viaFull(fullCheck[i]!)).ids) !== JSON.stringify(b[i]!.ids)) differ++;
  const newTokens = b.reduce((s, x) => s + x.ids.length, 0) / b.length;
  const promptTokens = ds.reduce((s, d) => s + d.prompt.length, 0) / ds.length;
  const share = batched.stats.prefixTokens / Math.max(1, batched.stats.promptTokens);
  say(`checked ${check.length} decisions of ${checkEps.length} episodes: batched with the prefix cache = alone from scratch, token for token; the full path differs on ${differ} of ${fullCheck.length} (float sums in the last bits); mean window ${promptTokens.toFixed(0)} tokens (${(share * 100).toFixed(0)}% from the prefix cache), ${newTokens.toFixed(2)} new tokens per decision`);

  // (d) the bound: ORT's throughput on one large batched forward, and FLOPs per decision
  const big = Array.from({ length: 16 }, (_, i) => ds[i % ds.length]!.prompt.concat(Array(meta.maxLen).fill(3)).slice(0, meta.maxLen));
  await full.logits(big);
  let bestMs = Infinity;
  // the best of 3 forwards, measured again in every round (interleaved with the contenders)
  const measureBound = async (): Promise<void> => {
    for (let i = 0; i < 3; i++) {
      const t0 = performance.now();
      await full.logits(big);
      bestMs = Math.min(bestMs, performance.now() - t0);
    }
  };
  await measureBound();
  const flopsPer = check.reduce((s, d, i) => s + decisionFlops(meta.config, meta.vocabSize, d.prompt.length, b[i]!.ids.length), 0) / check.length;
  // the same, when the prefix an episode's last window shares is not computed again
  const reused = checkEps.flatMap((ep) => ep.map((d, i) => {
    const prev = i > 0 ? ep[i - 1]!.prompt : [];
    let n = 0;
    while (n < Math.min(prev.length, d.prompt.length - 1) && prev[n] === d.prompt[n]) n++;
    return n;
  }));
  const flopsPerReuse = check.reduce((s, d, i) => s + decisionFlops(meta.config, meta.vocabSize, d.prompt.length, b[i]!.ids.length) - decisionFlops(meta.config, meta.vocabSize, reused[i]!, 0), 0) / check.length;


  // interleaved contenders
  const contenders: { key: 'baseline' | 'kv' | 'batched16' | 'batched64' | 'noprefix64'; what: string; streams: number; decode: Decode }[] = [
    { key: 'baseline', what: '(a) full graph, a forward per token, one decision at a time', streams: 1, decode: viaFull },
    { key: 'kv', what: '(b) key/value cache, one decision at a time', streams: 1, decode: viaKv1 },
    { key: 'batched16', what: `(c) cache + batcher + prefix cache, 16 in flight`, streams: 16, decode: viaBatch },
    { key: 'batched64', what: `(c) cache + batcher + prefix cache, 64 in flight`, streams: 64, decode: viaBatch },
    { key: 'noprefix64', what: `(c') cache + batcher, no prefix cache, 64 in flight`, streams: 64, decode: viaNoPrefix },
  ];
  const acc = new Map(contenders.map((c) => [c.key, { decisions: 0, tokens: 0, ms: 0, stepRows: 0, stepCalls: 0 }]));
  const slice = (o.seconds * 1000) / (o.rounds * contenders.length);
  const streams = new Map(contenders.map((c) => [c.key, streamsOf(c.streams)]));
  for (const c of contenders) await runFor(Math.min(300, slice / 4), streamsOf(c.streams), c.decode, eps.slice().reverse());
  for (let r = 0; r < o.rounds; r++) {
    await measureBound();
    for (const c of contenders) {
      const bt = c.key === 'noprefix64' ? noPrefix : batched;
      const s0 = { ...bt.stats };
      const x = await runFor(slice, streams.get(c.key)!, c.decode, eps);
      const t = acc.get(c.key)!;
      t.decisions += x.decisions;
      t.tokens += x.tokens;
      t.ms += x.ms;
      t.stepRows += bt.stats.stepRows - s0.stepRows;
      t.stepCalls += bt.stats.stepCalls - s0.stepCalls;
    }
    say(`round ${r + 1}/${o.rounds} done`);
  }
  const gflops = forwardFlops(meta.config, meta.vocabSize, 16, meta.maxLen) / (bestMs / 1000) / 1e9;
  const bound = (gflops * 1e9) / flopsPer;
  const boundReuse = (gflops * 1e9) / flopsPerReuse;
  const rate = (k: string): number => (acc.get(k as 'kv')!.decisions / acc.get(k as 'kv')!.ms) * 1000;
  const tps = (k: string): number => (acc.get(k as 'kv')!.tokens / acc.get(k as 'kv')!.ms) * 1000;
  const rows = (k: string): number => acc.get(k as 'kv')!.stepRows / Math.max(1, acc.get(k as 'kv')!.stepCalls);

  let sweep: BenchLmResult['sweep'];
  if (o.sweep) {
    // each setting replays whole episodes (early and late decisions alike), 16 or 64 at once
    sweep = [];
    for (const n of [16, 64]) {
      const some = eps.slice(0, n);
      const count = some.reduce((a, e) => a + e.length, 0);
      for (const maxBatch of [8, 16, 32, 64]) {
        for (const gatherMs of [0, 1]) {
          const bb = new DecodeBatcher(dec, { eosId: meta.eosId, maxBatch, gatherMs, prefixCache: DEFAULT_LM_PREFIX_CACHE });
          const ms = await replayAll(n, async (d) => (await bb.decode(req(d)))[0]!, some);
          sweep.push({ streams: n, maxBatch, gatherMs, decisions_per_s: (count / ms) * 1000 });
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
    bound_with_prefix_reuse_decisions_per_s: boundReuse,
    ratio_to_bound_with_prefix_reuse: best / boundReuse,
    noprefix64_decisions_per_s: rate('noprefix64'),
    prefix_cache_share: share,
    ort_gflops: gflops,
    mflop_per_decision: flopsPer / 1e6,
    tokens_per_s: { baseline: tps('baseline'), kv: tps('kv'), batched16: tps('batched16'), batched64: tps('batched64') },
    mean_rows_per_step: { batched16: rows('batched16'), batched64: rows('batched64') },
    full_vs_cache_differ: differ,
    kv_bytes_per_episode: batched.bytesPerRow,
    ...(largest ? { largest } : {}),
    defaults: served,
    ...(sweep ? { sweep } : {}),
  };
  if (o.json) {
    console.log(JSON.stringify(result));
    return result;
  }
  const f = (x: number, d = 0): string => x.toFixed(d);
  const trows: (string | number)[][] = contenders.map((c) => [c.what, f(rate(c.key)), f(tps(c.key)), f(1000 / rate(c.key), 2), c.streams > 1 ? f(rows(c.key), 1) : '1', f(rate(c.key) / base, 2), f(rate(c.key) / bound, 2)]);
  trows.push([`(d) bound: ${f(flopsPer / 1e6, 1)} MFLOP per decision at ${f(gflops)} GFLOP/s (ORT: the best [16, ${meta.maxLen}] forward, measured in every round)`, f(bound), '-', f(1000 / bound, 2), '-', f(bound / base, 2), '1.00']);
  trows.push([`(d') bound with the prefix reused: ${f(flopsPerReuse / 1e6, 1)} MFLOP per decision`, f(boundReuse), '-', f(1000 / boundReuse, 2), '-', f(boundReuse / base, 2), f(boundReuse / bound, 2)]);
  say(table(['contender', 'decisions/s', 'tokens/s', 'ms/decision', 'rows/step', '× (a)', '÷ bound (d)'], trows));
  if (sweep) say(`\nsweep (decisions/s):\n${table(['in flight', 'cap', 'gather ms', 'decisions/s'], sweep.map((s) => [s.streams, s.maxBatch, s.gatherMs, f(s.decisions_per_s)]))}`);
  say(`\nkey/value cache: ${f(batched.bytesPerRow / 1024)} KiB per episode in flight (${meta.config.nLayers} layers × keys and values × ${meta.maxLen} positions × ${meta.config.dModel} floats)`);
  if (largest) say(`largest zoo model (${largest.model}, its shapes, in a process of its own): ${f(largest.kv_bytes_per_episode / 1024)} KiB per episode in flight; ${largest.in_flight} in flight with the prefix cache full: cache ${f(largest.kv_mib, 1)} MiB, process RSS ${f(largest.rss_mib_before)} → ${f(largest.rss_mib_peak)} MiB at the peak (${largest.rss_mib_peak < 1024 ? 'under' : 'NOT under'} 1 GiB)`);
  say(`\ngoal: speedup ≥ 5× over (a): ${f(best / base, 2)}× (${best / base >= 5 ? 'met' : 'NOT met'}); batched ≥ 0.5 of the bound (d): ${f(best / bound, 2)} (${best / bound >= 0.5 ? 'met' : 'NOT met'}); of the bound with the prefix reused (d'): ${f(best / boundReuse, 2)}`);
  return result;
}

/**
 * 64 decisions in flight on a model of the largest zoo config's shapes (untrained weights; the
 * cache does not depend on them), with the prefix cache full, in a process of its own.
 */
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
    const script = fileURLToPath(new URL('./lm-memory.ts', import.meta.url));
    const out = await new Promise<string>((resolve, reject) => {
      execFile(process.execPath, [`--import=${import.meta.resolve('tsx')}`, script, join(tmp, 'l.onnx'), String(c.maxLen), String(vocab), '64'], { maxBuffer: 1 << 20 }, (e, stdout, stderr) => (e ? reject(new Error(`the memory check failed: ${stderr || e.message}`)) : resolve(stdout)));
    });
    const r = JSON.parse(out.trim().split('\n').at(-1)!) as Omit<NonNullable<BenchLmResult['largest']>, 'model'>;
    return { model: `lm/${c.name}`, ...r };
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}
