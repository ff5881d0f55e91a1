import test from 'ava';
import { Rng } from '../../../cluster/rng.ts';
import { loadGames } from '../../../envs/alfworld/index.ts';
import { loadWebshop, reset, step } from '../../../envs/webshop/index.ts';
import { collectDecisions } from '../../../policies/targets/lm/bc.ts';
import { renumbering } from '../../../policies/targets/lm/renumber.ts';
import { shopper } from '../../../policies/targets/lm/shopper.ts';
import { synthGoals, withGoals } from '../../../policies/targets/lm/ws-goals.ts';

const ws = loadWebshop();

test('synthetic WebShop goals - from products no test or dev goal targets, deterministic, scored by the env, bought by the shopper', (t) => {
  const goals = synthGoals(ws, new Rng('t'), 200);
  t.deepEqual(goals, synthGoals(ws, new Rng('t'), 200));
  t.notDeepEqual(goals, synthGoals(ws, new Rng('u'), 200));
  const held = new Set(ws.goals.filter((g) => g.split !== 'train').map((g) => g.asin));
  t.true(goals.every((g) => !held.has(g.asin) && g.split === 'train' && /, and price lower than \d+\.00 dollars$/.test(g.instruction)));
  t.true(new Set(goals.map((g) => g.instruction)).size > 190);
  const env = withGoals(ws, goals);
  t.is(ws.goals.length, 179, 'the loaded env is not changed');
  let won = 0;
  for (const g of goals) {
    let s = reset(env, g.id, { protocol: 'react' }).state;
    for (let k = 0; k < 15 && !s.done; k++) s = step(env, s, shopper(env, s) ?? 'click[Buy Now]').state;
    if (s.reward === 1) won++;
  }
  t.true(won / goals.length > 0.8, `shopper won ${won} of ${goals.length}`);
});

test('synthetic WebShop goals - BC draws episodes from the training goals and the synthetic ones', async (t) => {
  const ds = await collectDecisions({ env: 'webshop', episodes: 40, seed: 2, noise: 0, synthGoals: 300 });
  const ids = new Set(ds.map((d) => d.taskId));
  t.true([...ids].some((i) => i.startsWith('synth_')) && [...ids].some((i) => i.startsWith('fixed_')));
  // without the option the data is what it was
  const plain = await collectDecisions({ env: 'webshop', episodes: 10, seed: 2, noise: 0 });
  t.true(plain.every((d) => d.taskId.startsWith('fixed_')));
});

test('renumbering - one increasing map per kind over the whole episode; the recorded decisions are consistent with it', async (t) => {
  const g = loadGames().games.find((x) => x.split === 'valid_train')!;
  const rn = renumbering(g, new Rng('r'));
  const names = g.names.filter((n) => /\d+$/.test(n));
  const mapped = names.map(rn);
  t.is(new Set(mapped).size, new Set(names).size, 'a bijection');
  t.notDeepEqual(mapped, names);
  // increasing within a kind (the explorer's ties by number keep their order)
  const kindNums = (xs: string[]): Map<string, number[]> => {
    const m = new Map<string, number[]>();
    for (const x of xs) {
      const [, k, n] = /^(.+) (\d+)$/.exec(x)!;
      m.set(k!, [...(m.get(k!) ?? []), Number(n)]);
    }
    return m;
  };
  const before = kindNums(names);
  const after = kindNums(mapped);
  for (const [k, ns] of before) {
    const order = ns.map((_, i) => i).sort((a, b) => ns[a]! - ns[b]!);
    const an = after.get(k)!;
    for (let i = 1; i < order.length; i++) t.true(an[order[i]!]! > an[order[i - 1]!]!, k);
  }
  // "desklamp 1" is not rewritten as "desk" + …
  t.is(rn('go to desk 1 and use desklamp 1').split('desklamp ').length, 2);
  const ds = await collectDecisions({ env: 'alfworld', episodes: 6, seed: 3, noise: 0, renumber: 1 });
  for (const d of ds) {
    // every label is among the (renumbered) admissible actions, and every earlier action was in its turn's text
    t.true(d.admissible.includes(d.action), `${d.action} not in ${d.admissible.join('; ')}`);
    const said = d.messages.filter((m) => m.role === 'assistant').map((m) => m.content);
    t.deepEqual(said, d.actions);
  }
  const plain = await collectDecisions({ env: 'alfworld', episodes: 6, seed: 3, noise: 0 });
  t.notDeepEqual(ds.map((d) => d.action), plain.map((d) => d.action));
  t.deepEqual(ds.map((d) => d.action.replace(/\d+/g, '#')), plain.map((d) => d.action.replace(/\d+/g, '#')));
});
