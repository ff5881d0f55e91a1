import test from 'ava';
import { Rng } from '../../../cluster/rng.ts';
import { loadGames, reset, step, admissible, stepMany, type AlfState } from '../../../envs/alfworld/index.ts';

const set = loadGames();

function randomEpisode(seed: number, gameIdx: number, n: number): { obs: string[]; acts: string[] } {
  const g = set.games[gameIdx]!;
  const rng = new Rng(seed);
  let s = reset(g, { protocol: 'react' }).state;
  const obs: string[] = [];
  const acts: string[] = [];
  for (let i = 0; i < n && !s.done; i++) {
    const a = rng.pick(admissible(g, s));
    const r = step(g, s, a);
    obs.push(r.observation);
    acts.push(a);
    s = r.state;
  }
  return { obs, acts };
}

test('same seed gives the same episode; another seed a different one', (t) => {
  const a = randomEpisode(42, 5, 30);
  const b = randomEpisode(42, 5, 30);
  const c = randomEpisode(43, 5, 30);
  t.deepEqual(a, b);
  t.notDeepEqual(a.acts, c.acts);
});

test('state is plain data: a JSON round-tripped state replays identical observations', (t) => {
  for (const idx of [0, 50, 150, 250, 339]) {
    const g = set.games[idx]!;
    const rng = new Rng(idx);
    let s = reset(g, { protocol: 'agentbench' }).state;
    for (let i = 0; i < 10; i++) s = step(g, s, rng.pick(admissible(g, s))).state;
    const copy = JSON.parse(JSON.stringify(s)) as AlfState;
    t.deepEqual(copy, s);
    let s1 = s;
    let s2 = copy;
    for (let i = 0; i < 15; i++) {
      const a = rng.pick(admissible(g, s1));
      const r1 = step(g, s1, a);
      const r2 = step(g, JSON.parse(JSON.stringify(s2)) as AlfState, a);
      t.is(r2.observation, r1.observation);
      t.is(r2.done, r1.done);
      s1 = r1.state;
      s2 = r2.state;
    }
  }
});

test('step is pure: the input state is not modified', (t) => {
  const g = set.games[3]!;
  const s = reset(g, { protocol: 'raw' }).state;
  const before = JSON.stringify(s);
  step(g, s, admissible(g, s)[0]!);
  t.is(JSON.stringify(s), before);
});

test('stepMany serves any episode from its state (as a worker pool would)', (t) => {
  const g = set.games[10]!;
  const r0 = stepMany([{ op: 'reset', game: g.id, opts: { protocol: 'react' } }])[0]!;
  t.true(r0.ok);
  if (!r0.ok || r0.op !== 'reset') return;
  let s = JSON.parse(JSON.stringify(r0.result.state)) as AlfState;
  const direct = reset(g, { protocol: 'react' });
  t.is(r0.result.observation, direct.observation);
  let sd = direct.state;
  for (const a of g.walkthrough.map((x) => x.replace(/^move (.+) to (.+)$/, 'put $1 in/on $2'))) {
    const r = stepMany([{ op: 'step', game: g.id, state: s, action: a }])[0]!;
    const d = step(g, sd, a);
    if (!r.ok || r.op !== 'step') return t.fail();
    t.is(r.result.observation, d.observation);
    s = JSON.parse(JSON.stringify(r.result.state));
    sd = d.state;
  }
  t.true(s.won);
  const [bad] = stepMany([{ op: 'step', game: 'no-such-game', state: s, action: 'look' }]);
  t.false(bad!.ok);
  if (!bad!.ok) t.is(bad!.error.code, 'ALFWORLD_UNKNOWN_GAME');
});

import { replayAlfworld } from '../../../envs/alfworld/index.ts';
test('replay prints the initial observation then one JSONL line per action', (t) => {
  const g = set.games[0]!;
  const lines = replayAlfworld({ game: g.id, grammar: 'current', actions: g.walkthrough });
  t.is(lines.length, g.walkthrough.length + 1);
  const first = JSON.parse(lines[0]!);
  t.regex(first.observation, /^-= Welcome to TextWorld, ALFRED! =-/);
  const last = JSON.parse(lines[lines.length - 1]!);
  t.deepEqual([last.reward, last.done], [1, true]);
});
