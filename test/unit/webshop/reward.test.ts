import test from 'ava';
import { readFileSync } from 'node:fs';
import { getReward, getTypeReward, getAttributeReward, getOptionReward, normalizeColor, titleNouns, type RewardGoal, type RewardProduct } from '../../../envs/webshop/index.ts';

// transcribed from WebShop's own reward tests (copy of shared/data/webshop/reward_test_vectors.json)
const V = JSON.parse(readFileSync(new URL('./fixtures/reward_test_vectors.json', import.meta.url), 'utf8'));
const close = (a: number, b: number, tol = 1e-2): boolean => Math.abs(a - b) <= tol;
const goalOf = (name: string, extra: Partial<RewardGoal> = {}): RewardGoal => ({ name, attributes: [], goal_options: [], price_upper: 100, ...extra });

test('normalize_color - every vector', (t) => {
  for (const [input, want] of V.normalize_color as [string, string][]) t.is(normalizeColor(input), want, input);
});

test('type reward - exact match, category overlap cases and title scores within tolerance', (t) => {
  let n = 0;
  for (const c of V.type_reward) {
    if (c.goal) {
      const r = getTypeReward({ ...c.purchased }, { ...c.goal, attributes: [], goal_options: [], price_upper: 1 });
      t.is(r.r_type, c.expect.r_type);
      t.is(r.query_match, c.expect.query_match);
      t.is(r.category_match, c.expect.category_match);
      t.is(r.title_score, c.expect.title_score);
      n++;
    } else if (c.category_only) {
      for (const [pc, want] of c.cases as [string, boolean][]) {
        const r = getTypeReward({ name: 'Name 1', query: 'Query 2', product_category: pc }, goalOf('Name 1', { query: 'Query 1', product_category: c.goal_category }));
        t.is(r.category_match, want, pc);
        n++;
      }
    } else {
      const r = getTypeReward({ name: c.purchased_name }, goalOf(c.goal_name));
      if (c.expect_title_score_approx !== undefined) t.true(close(r.title_score, c.expect_title_score_approx), `${r.title_score} vs ${c.expect_title_score_approx}`);
      else t.true(r.title_score < c.expect_title_score_lt);
      n++;
    }
  }
  t.is(n, 10);
});

test('attribute reward - every vector (fuzzy token-set > 85, then title/bullets/description substrings)', (t) => {
  for (const c of V.attribute_reward) {
    const [r, n] = getAttributeReward({ name: '', ...c.purchased }, { attributes: c.goal_attributes });
    t.is(r, c.expect.r_attr);
    t.is(n, c.expect.num_attr_matches);
  }
});

test('option reward - every vector, including no goal options (null) and no purchased options (0)', (t) => {
  for (const c of V.option_reward) {
    const [r, n] = getOptionReward({ name: '' }, c.goal, c.purchased);
    t.is(n, c.expect.matches);
    t.is(r, c.expect.r_option);
  }
});

test('total reward - the sequence of mutations of WebShop test_get_reward', (t) => {
  const tr = V.total_reward;
  const goal: RewardGoal = structuredClone(tr.goal);
  const purchased: RewardProduct & { goal_options: Record<string, string> } = structuredClone(tr.purchased);
  for (const s of tr.steps) {
    if (s.change !== 'none') {
      for (const [path, v] of Object.entries(s.change as Record<string, unknown>)) {
        const [obj, key] = path.split('.') as ['goal' | 'purchased', string];
        (obj === 'goal' ? (goal as unknown as Record<string, unknown>) : (purchased as unknown as Record<string, unknown>))[key] = v;
      }
    }
    const [r] = getReward(purchased, goal, 35, purchased.goal_options);
    if (s.expect !== undefined) t.is(r, s.expect);
    else t.true(close(r, s.expect_approx), `${r} vs ${s.expect_approx}`);
  }
});

test('title nouns - drop numbers, lower-case function words, -ed participles and audience words', (t) => {
  t.deepEqual(titleNouns('Mens D.O.N. Issue 2 Gca Basketball Sneakers Shoes Casual - Off White'), ['d.o.n', 'issue', 'gca', 'basketball', 'sneakers', 'shoes', 'casual', 'off', 'white']);
  t.deepEqual(titleNouns('UL Listed Power Cord for JBL Bar 3.1 Bar'), ['ul', 'power', 'cord', 'jbl', 'bar', 'bar']);
  t.deepEqual(titleNouns('Saireed Cord'), ['saireed', 'cord']);
});

test('type factor - 0.5 when query, category and titles all fail, 0 when no title noun is shared', (t) => {
  const g = goalOf('Wireless Gaming Mouse Pad Combo');
  t.is(getTypeReward({ name: 'Mouse Trap for Kitchen Garden Yard Barn Shed' }, g).r_type, 0.5);
  t.is(getTypeReward({ name: 'Ceramic Coffee Cup' }, g).r_type, 0);
  // the goal's own product matches by query/category even when those are unknown (null)
  t.true(getTypeReward({ asin: 'B0', name: 'X', query: null }, { ...g, asin: 'B0', query: null }).query_match);
});
