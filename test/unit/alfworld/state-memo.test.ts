import test from 'ava';
import { admissible, expert, loadGames, reset, step } from '../../../envs/alfworld/index.ts';
import { StateMemo } from '../../../envs/alfworld/state-memo.ts';

test('state memo - admissible and expert along an episode, answered from the memo, are what a fresh Game object computes; a caller that edits the list changes nothing', (t) => {
  const g = loadGames().games[3]!;
  let s = reset(g, { protocol: 'react' }).state;
  let checked = 0;
  for (let i = 0; i < 12 && !s.done; i++) {
    const a1 = admissible(g, s);
    a1.push('not a command');
    const hit = admissible(g, s);
    t.false(hit.includes('not a command'), 'the memo keeps its own copy');
    // a copy of the game is another object: nothing memoised for it, so computed afresh
    t.deepEqual(hit, admissible({ ...g }, s));
    t.is(expert(g, s), expert({ ...g }, s));
    checked++;
    s = step(g, s, expert(g, s) ?? hit[0]!).state;
  }
  t.true(checked > 3);
});

test('state memo - least recently used keys go first; a hit does not compute again', (t) => {
  const m = new StateMemo<number>(2);
  const g = loadGames().games[0]!;
  let calls = 0;
  const f = (v: number) => () => (calls++, v);
  t.is(m.get(g, 'a', f(1)), 1);
  t.is(m.get(g, 'b', f(2)), 2);
  t.is(m.get(g, 'a', f(9)), 1); // a hit: a is now the most recent
  t.is(calls, 2);
  t.is(m.get(g, 'c', f(3)), 3); // evicts b
  t.is(m.get(g, 'a', f(9)), 1);
  t.is(m.get(g, 'b', f(4)), 4); // computed again
  t.is(calls, 4);
  // another Game object never shares entries, whatever its id; the bound is over all games
  const other = { ...g };
  t.is(m.get(other, 'a', f(5)), 5);
  t.is(m.size, 2);
});
