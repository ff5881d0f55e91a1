import test from 'ava';
import { loadWebshop, reset, step, expert, stepMany, verifyWebshop, summarize, benchWebshop, type WebshopState, type PoolRequest } from '../../../envs/webshop/index.ts';

const env = loadWebshop();

test('verify - the expert reaches reward 1 on all 179 goals, within ReAct’s 15 steps', (t) => {
  const v = verifyWebshop();
  t.true(v.ok);
  t.is(v.total, 179);
  t.is(v.solved, 179);
  t.is(v.score, 1);
  t.is(v.success, 1);
  t.deepEqual(v.rows.map((r) => [r.split, r.goals, r.solved, r.solvedWithinLimit]), [
    ['train', 91, 91, 91],
    ['dev', 49, 49, 49],
    ['test', 39, 39, 39],
  ]);
  t.deepEqual(v.failures, []);
});

test('expert - recovers from any page: another product, a sub page, a wrong option', (t) => {
  const g = env.goals.find((x) => Object.keys(x.goalOptions).length > 0)!;
  const other = env.products.find((p) => p.asin !== g.asin)!.asin;
  let s: WebshopState = { ...reset(env, g, { maxSteps: 50 }).state, page: 'item', asin: other, results: [other], keywords: 'x' };
  const [, v] = Object.entries(g.goalOptions)[0]!;
  const wrong = Object.values(env.byAsin.get(g.asin)!.options).flat().find((x) => x !== v);
  let misled = false;
  for (let i = 0; i < 40 && !s.done; i++) {
    s = step(env, s, expert(env, s)!).state;
    // once on the target, click a wrong option once; the expert must undo it
    if (wrong && !misled && s.page === 'item' && s.asin === g.asin) {
      s = step(env, s, `click[${wrong}]`).state;
      misled = true;
    }
  }
  t.true(misled || !wrong);
  t.is(s.reward, 1);
});

test('score and success - a wrong product or a missing option scores below 1; summarize reports both', (t) => {
  const g = env.goals.find((x) => Object.keys(x.goalOptions).length > 0)!;
  const base = { ...reset(env, g).state, page: 'results' as const, keywords: 'x', results: [g.asin] };
  const noOpt = step(env, step(env, base, `click[${g.asin}]`).state, 'click[Buy Now]');
  t.true(noOpt.done);
  t.true(noOpt.reward < 1);
  t.false(noOpt.info.success);
  const wrongAsin = env.products.find((p) => p.asin !== g.asin && p.price <= g.priceUpper)!.asin;
  const wrong = step(env, step(env, { ...base, results: [wrongAsin] }, `click[${wrongAsin}]`).state, 'click[Buy Now]');
  t.true(wrong.reward < 1);
  t.deepEqual(summarize([1, 0.5, 0, 1]), { score: 0.625, success: 0.5, episodes: 4 });
});

function run(goal: string | null, seed: number, actions?: string[]): { obs: string[]; states: WebshopState[] } {
  let { state, observation } = reset(env, goal, { seed, split: 'dev' });
  const obs = [observation];
  const states = [state];
  const acts = actions ?? [];
  for (let i = 0; i < 15 && !state.done; i++) {
    const a = actions ? acts[i] : expert(env, state);
    if (a === undefined || a === null) break;
    if (!actions) acts.push(a);
    const r = step(env, state, a);
    state = r.state;
    obs.push(r.observation);
    states.push(state);
  }
  return { obs, states };
}

test('same seed, same episode; the seed picks a goal from the split', (t) => {
  const a = run(null, 7);
  const b = run(null, 7);
  t.deepEqual(a, b);
  t.is(env.goalsById.get(a.states[0]!.goal)!.split, 'dev');
  const goals = new Set([1, 2, 3, 4, 5, 6, 8, 9].map((s) => run(null, s).states[0]!.goal));
  t.true(goals.size > 1);
});

test('state - JSON round-tripped states replay identically, and step never mutates its input', (t) => {
  const g = env.goals[3]!;
  let { state } = reset(env, g);
  const acts = ['search[something odd]', 'click[Next >]', 'click[nope]', 'click[< Prev]'];
  for (const a of acts) state = step(env, state, a).state;
  for (let a = expert(env, state); a !== null && !state.done; a = expert(env, state)) {
    const frozen = JSON.stringify(state);
    const copy = JSON.parse(frozen) as WebshopState;
    const r1 = step(env, state, a);
    const r2 = step(env, copy, a);
    t.deepEqual(r2, r1);
    t.is(JSON.stringify(state), frozen, 'input state unchanged');
    t.deepEqual(JSON.parse(JSON.stringify(r1.state)), r1.state, 'plain data');
    state = r1.state;
  }
  t.is(state.reward, 1);
});

test('stepMany - a batch equals direct calls; errors come back as tagged data', (t) => {
  const r0 = reset(env, 'fixed_1');
  const reqs: PoolRequest[] = [
    { op: 'reset', goal: 'fixed_1' },
    { op: 'step', state: r0.state, action: 'search[usb microphone]' },
    { op: 'expert', state: r0.state },
    { op: 'available', state: r0.state },
    { op: 'reset', goal: 'fixed_99999' },
    { op: 'step', state: { nope: true } as unknown as WebshopState, action: 'x' },
  ];
  const out = stepMany(reqs);
  t.deepEqual(out[0], { ok: true, op: 'reset', result: r0 });
  t.deepEqual(out[1], { ok: true, op: 'step', result: step(env, r0.state, 'search[usb microphone]') });
  t.deepEqual(out[2], { ok: true, op: 'expert', result: expert(env, r0.state) });
  t.deepEqual(out[3], { ok: true, op: 'available', result: { has_search_bar: true, clickables: ['search'] } });
  t.like(out[4], { ok: false, error: { code: 'WEBSHOP_UNKNOWN_GOAL' } });
  t.like(out[5], { ok: false, error: { code: 'WEBSHOP_BAD_STATE' } });
});

test('bench - reports search latency and step rate', (t) => {
  const b = benchWebshop({ seconds: 0.4 });
  t.true(b.searchP50Ms > 0 && b.searchP99Ms >= b.searchP50Ms);
  t.true(b.stepsPerSec > 100);
  t.is(b.products, 1468);
});
