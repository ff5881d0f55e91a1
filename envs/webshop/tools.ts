/**
 * What the CLI calls: verify (the expert reaches reward 1 on every goal) and bench (search
 * latency, step rate; direct). Also `summarize`, the two metrics WebShop papers report.
 */
import { loadWebshop, type LoadOpts } from './data.ts';
import { reset, step, type ProtocolName } from './engine.ts';
import { expert, expertQueries } from './expert.ts';
import { buildIndex } from './search.ts';
import type { Split, WebshopEnv } from './types.ts';

/** score = mean reward × 100 is WebShop's "score"; success = share of episodes with reward 1. */
export function summarize(rewards: readonly number[]): { score: number; success: number; episodes: number } {
  const n = rewards.length;
  if (n === 0) return { score: 0, success: 0, episodes: 0 };
  return { score: rewards.reduce((a, b) => a + b, 0) / n, success: rewards.filter((r) => r === 1).length / n, episodes: n };
}

export interface VerifyRow {
  split: Split;
  goals: number;
  solved: number;
  /** solved within the protocol's step limit (ReAct 15 by default) */
  solvedWithinLimit: number;
  meanSteps: number;
  maxSteps: number;
}
export interface VerifyResult {
  rows: VerifyRow[];
  solved: number;
  total: number;
  ok: boolean;
  failures: { goal: string; reward: number; trace: string[] }[];
  score: number;
  success: number;
  ms: number;
}
export interface VerifyOpts extends LoadOpts {
  protocol?: ProtocolName;
  log?: (line: string) => void;
}

/** Run the expert on every goal; ok when each one ends with reward 1. */
export function verifyWebshop(opts: VerifyOpts = {}): VerifyResult {
  const t0 = performance.now();
  const env = loadWebshop(opts);
  const limit = { react: 15, 'agentbench-v0.2': 10, 'agentbench-main': 20 }[opts.protocol ?? 'react'];
  const rows = new Map<Split, VerifyRow & { stepsSum: number }>();
  const failures: VerifyResult['failures'] = [];
  const rewards: number[] = [];
  for (const g of env.goals) {
    const row = rows.get(g.split) ?? rows.set(g.split, { split: g.split, goals: 0, solved: 0, solvedWithinLimit: 0, meanSteps: 0, maxSteps: 0, stepsSum: 0 }).get(g.split)!;
    row.goals++;
    let { state } = reset(env, g, { maxSteps: 100 });
    const trace: string[] = [];
    while (!state.done) {
      const a = expert(env, state);
      if (a === null) break;
      trace.push(a);
      state = step(env, state, a).state;
    }
    rewards.push(state.reward);
    if (state.reward === 1) {
      row.solved++;
      if (state.steps <= limit) row.solvedWithinLimit++;
      row.stepsSum += state.steps;
      row.maxSteps = Math.max(row.maxSteps, state.steps);
    } else failures.push({ goal: g.id, reward: state.reward, trace });
  }
  const order: Split[] = ['train', 'dev', 'test'];
  const out = order
    .filter((s) => rows.has(s))
    .map((s) => {
      const { stepsSum, ...r } = rows.get(s)!;
      return { ...r, meanSteps: r.solved ? stepsSum / r.solved : 0 };
    });
  const log = opts.log ?? (() => {});
  for (const r of out) log(`${r.split.padEnd(5)} expert ${r.solved}/${r.goals} (within ${limit} steps: ${r.solvedWithinLimit})  steps mean ${r.meanSteps.toFixed(2)} max ${r.maxSteps}`);
  for (const f of failures.slice(0, 20)) log(`FAIL ${f.goal} reward ${f.reward}: ${f.trace.join(' | ')}`);
  const solved = rewards.filter((r) => r === 1).length;
  const m = summarize(rewards);
  return { rows: out, solved, total: env.goals.length, ok: solved === env.goals.length && env.goals.length > 0, failures, score: m.score, success: m.success, ms: performance.now() - t0 };
}

export interface BenchResult {
  searchP50Ms: number;
  searchP99Ms: number;
  searches: number;
  stepsPerSec: number;
  steps: number;
  /** load time (0 when this source was already loaded in the process) */
  loadMs: number;
  /** time to build a fresh BM25 index over the catalog */
  indexBuildMs: number;
  products: number;
}

const quantile = (xs: number[], q: number): number => xs[Math.min(xs.length - 1, Math.floor(q * xs.length))] ?? 0;

/** Direct (single-thread) figures: BM25 search latency over the goals' queries, expert-episode step rate. */
export function benchWebshop(opts: { seconds?: number } & LoadOpts = {}): BenchResult {
  const seconds = opts.seconds ?? 3;
  const t0 = performance.now();
  const env: WebshopEnv = loadWebshop(opts);
  const loadMs = performance.now() - t0;
  const t1 = performance.now();
  buildIndex(env.products);
  const indexBuildMs = performance.now() - t1;
  const queries = env.goals.flatMap((g) => expertQueries(g));
  const times: number[] = [];
  let t = performance.now();
  while (performance.now() - t < (seconds * 1000) / 2) {
    for (const q of queries) {
      const a = performance.now();
      env.index.search(q);
      times.push(performance.now() - a);
    }
  }
  times.sort((a, b) => a - b);
  // expert episodes (incl. an invalid action and a page turn each), replayed as fixed action lists
  const eps = env.goals.map((g) => {
    let { state } = reset(env, g, { maxSteps: 100 });
    const acts: string[] = ['click[nothing]'];
    while (!state.done) {
      const a = expert(env, state);
      if (a === null) break;
      acts.push(a);
      if (a.startsWith('search[')) acts.push('click[Next >]', 'click[< Prev]');
      state = step(env, state, a).state;
    }
    return { g, acts };
  });
  let n = 0;
  t = performance.now();
  while (performance.now() - t < (seconds * 1000) / 2) {
    for (const { g, acts } of eps) {
      let { state } = reset(env, g, { maxSteps: 100 });
      for (const a of acts) {
        state = step(env, state, a).state;
        n++;
      }
    }
  }
  const el = (performance.now() - t) / 1000;
  return { searchP50Ms: quantile(times, 0.5), searchP99Ms: quantile(times, 0.99), searches: times.length, stepsPerSec: n / el, steps: n, loadMs, indexBuildMs, products: env.products.length };
}
