import test from 'ava';
import { Rng } from '../../../cluster/rng.ts';
import { loadGames, reset, step, expert, perturb, isGoalMet, admissible, isDeadEnd, type AlfState, type Game } from '../../../envs/alfworld/index.ts';

const set = loadGames();

function run(g: Game, s0: AlfState, max = 60): { won: boolean; steps: number; nothing: number } {
  let s = s0;
  let steps = 0;
  let nothing = 0;
  while (!s.won && steps < max) {
    const a = expert(g, s);
    if (a === null) break;
    const r = step(g, s, a);
    if (r.info.pddl === null) nothing++;
    s = r.state;
    steps++;
  }
  return { won: s.won && isGoalMet(g, s), steps, nothing };
}

test('the expert solves every game from the start, never issuing an inapplicable command', (t) => {
  const bad: string[] = [];
  for (const g of set.games) {
    const r = run(g, reset(g, { protocol: 'raw' }).state);
    if (!r.won || r.nothing > 0) bad.push(`${g.id} won=${r.won} nothing=${r.nothing}`);
  }
  t.deepEqual(bad, []);
});

test('the expert solves every game after seeded random perturbations (both grammars)', (t) => {
  const bad: string[] = [];
  let perturbedAway = 0;
  for (const g of set.games) {
    for (let i = 0; i < 2; i++) {
      const rng = new Rng(`expert-test:${g.id}:${i}`);
      const gk = i === 0 ? 'legacy' : 'current';
      const s = perturb(g, gk, rng, 4 + rng.int(10));
      if (s.steps > 0) perturbedAway++;
      if (isDeadEnd(g, s)) continue;
      const r = run(g, s);
      if (!r.won || r.nothing > 0) bad.push(`${g.id}#${i} won=${r.won} nothing=${r.nothing}`);
    }
  }
  t.deepEqual(bad, []);
  t.true(perturbedAway > 600);
});

test('expert returns null once the goal is met', (t) => {
  const g = set.games[0]!;
  let s = reset(g, { protocol: 'raw', grammar: 'current' }).state;
  for (const a of g.walkthrough) s = step(g, s, a).state;
  t.true(s.won);
  t.is(expert(g, s), null);
});

test('expert recovers from long random walks (held objects, opened receptacles)', (t) => {
  const bad: string[] = [];
  const deadEnds: string[] = [];
  for (const g of set.games.filter((_, i) => i % 17 === 0)) {
    const rng = new Rng(`walk:${g.id}`);
    let s = reset(g, { protocol: 'raw' }).state;
    for (let i = 0; i < 40; i++) {
      const r = step(g, s, rng.pick(admissible(g, s)));
      if (r.state.won) break;
      s = r.state;
    }
    if (isDeadEnd(g, s)) {
      deadEnds.push(g.id);
      t.is(expert(g, s), 'look');
      continue;
    }
    const r = run(g, s, 80);
    if (!r.won) bad.push(g.id);
  }
  t.deepEqual(bad, []);
  t.true(deadEnds.length <= 3);
});

test('a held object that no receptacle can contain is a dead end (faithful to the PDDL)', (t) => {
  const g = set.get('valid_seen/pick_cool_then_place_in_recep-Lettuce-None-CounterTop-11/trial_T20190908_222555_651605');
  let s = reset(g, { protocol: 'raw' }).state;
  for (const a of ['go to garbagecan 1', 'take papertowelroll 1 from garbagecan 1']) s = step(g, s, a).state;
  t.true(isDeadEnd(g, s));
  t.false(admissible(g, s).some((a) => a.startsWith('put ')));
  t.false(isDeadEnd(g, reset(g, {}).state));
});
