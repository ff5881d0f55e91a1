import test from 'ava';
import { expert, loadGames, reset, step, type Game } from '../../../envs/alfworld/index.ts';
import { bcRows, collectDecisions, earlierActionTargets } from '../../../policies/targets/lm/bc.ts';
import { explorer, searchPrior } from '../../../policies/targets/lm/explorer.ts';
import { LmTokenizer } from '../../../policies/targets/lm/tokenizer.ts';
import { harvestWords } from '../../../policies/targets/lm/vocab.ts';

const games = loadGames().games;

function play(g: Game, teacher: 'explorer' | 'oracle', limit = 49, order: 'up' | 'down' = 'up'): { actions: string[]; observations: string[]; won: boolean } {
  const r = reset(g, { grammar: 'legacy', protocol: 'react' });
  let s = r.state;
  const ex = explorer(g, undefined, { order });
  const actions: string[] = [];
  const observations = [r.observation];
  for (let k = 0; k < limit && !s.won; k++) {
    const a = teacher === 'explorer' ? ex.next(s) : expert(g, s);
    if (a === null) break;
    const x = step(g, s, a);
    s = x.state;
    ex.played(a, x.observation);
    actions.push(a);
    observations.push(x.observation);
  }
  return { actions, observations, won: s.won };
}

test('explorer - solves nearly every valid_seen game within 49 steps, searching (longer than the oracle)', (t) => {
  const seen = games.filter((g) => g.split === 'valid_seen');
  let won = 0;
  let steps = 0;
  let oracleSteps = 0;
  for (const g of seen) {
    const e = play(g, 'explorer');
    const o = play(g, 'oracle');
    if (e.won) won++;
    steps += e.actions.length;
    oracleSteps += o.actions.length;
  }
  t.true(won / seen.length >= 0.95, `${won}/${seen.length}`);
  t.true(steps > oracleSteps * 1.3, `explorer ${steps} steps vs oracle ${oracleSteps}`);
  t.log(`explorer ${won}/${seen.length}, ${(steps / seen.length).toFixed(1)} steps/game; oracle ${(oracleSteps / seen.length).toFixed(1)}`);
});

test('explorer - search order down: a kind from its highest number to 1, the kinds in the same order, as many games won', (t) => {
  const seen = games.filter((g) => g.split === 'valid_seen');
  const res = { up: { won: 0, steps: 0 }, down: { won: 0, steps: 0 } };
  let runs = 0;
  for (const g of seen) {
    const up = play(g, 'explorer');
    const down = play(g, 'explorer', 49, 'down');
    for (const [k, r] of [['up', up], ['down', down]] as const) {
      res[k].won += r.won ? 1 : 0;
      res[k].steps += r.actions.length;
    }
    // the visits of each kind, in order: down never goes up within a kind's run; up never goes down
    const visits = (acts: string[]): Array<[string, number]> => acts.flatMap((a) => {
      const m = /^go to (\D+) (\d+)$/.exec(a);
      return m ? [[m[1]!, Number(m[2])] as [string, number]] : [];
    });
    const monotone = (vs: Array<[string, number]>, dir: 1 | -1): boolean => vs.every(([k, n], i) => i === 0 || vs[i - 1]![0] !== k || Math.sign(n - vs[i - 1]![1]) === dir);
    const firstTake = (acts: string[]): number => { const i = acts.findIndex((a) => a.startsWith('take ')); return i < 0 ? acts.length : i; };
    const du = visits(down.actions.slice(0, firstTake(down.actions)));
    const uu = visits(up.actions.slice(0, firstTake(up.actions)));
    if (du.length >= 2) {
      runs++;
      t.true(monotone(du, -1), `down: ${du.map((v) => v.join(' ')).join(', ')}`);
      t.true(monotone(uu, 1), `up: ${uu.map((v) => v.join(' ')).join(', ')}`);
      // the kinds come in the same order
      const kinds = (vs: Array<[string, number]>): string[] => vs.map((v) => v[0]).filter((k, i, a) => i === 0 || a[i - 1] !== k);
      const [kd, ku] = [kinds(du), kinds(uu)];
      t.deepEqual(kd.slice(0, Math.min(kd.length, ku.length) - 1), ku.slice(0, Math.min(kd.length, ku.length) - 1));
    }
  }
  t.log(`up: ${res.up.won}/${seen.length} won, ${(res.up.steps / seen.length).toFixed(1)} steps/game; down: ${res.down.won}/${seen.length}, ${(res.down.steps / seen.length).toFixed(1)}; ${runs} searches compared`);
  t.true(runs > 50);
  t.true(res.down.won >= 0.95 * seen.length);
});

test('explorer - acts on what it saw: it takes only objects named in the last observation, and its moves before the first take do not depend on hidden placement', (t) => {
  // games with the same opening observation (room + goal) but different trials place objects differently
  const byOpening = new Map<string, Game[]>();
  for (const g of games) {
    const o = reset(g, { grammar: 'legacy', protocol: 'react' }).observation;
    byOpening.set(o, [...(byOpening.get(o) ?? []), g]);
  }
  let groups = 0;
  let oracleDiffers = 0;
  for (const gs of byOpening.values()) {
    const runs = gs.map((g) => play(g, 'explorer'));
    for (const r of runs) {
      r.actions.forEach((a, i) => {
        const m = /^take (.+) from /.exec(a);
        if (m) t.true(r.observations[i]!.includes(m[1]!), `took ${m[1]} after "${r.observations[i]}"`);
      });
    }
    if (gs.length < 2) continue;
    groups++;
    // up to the first step where the runs' observations part, the explorer's actions agree
    const [a, b] = runs;
    for (let i = 0; i < Math.min(a!.actions.length, b!.actions.length); i++) {
      t.is(a!.actions[i], b!.actions[i]);
      if (a!.observations[i + 1] !== b!.observations[i + 1]) break;
    }
    const [oa, ob] = gs.map((g) => play(g, 'oracle'));
    if (oa!.actions[0] !== ob!.actions[0]) oracleDiffers++;
  }
  t.true(groups >= 5, `${groups} rooms with two trials`);
  // the oracle's first move does depend on where things are hidden
  t.true(oracleDiffers >= 1, `oracle's first move differs in ${oracleDiffers} of ${groups}`);
});

test('explorer - the search prior is counted from the training games and ranks likely places first', (t) => {
  const p = searchPrior();
  const apple = p.get('apple')!;
  t.true((apple.get('countertop') ?? 0) + (apple.get('fridge') ?? 0) > (apple.get('drawer') ?? 0));
  t.deepEqual(searchPrior(), p);
  t.true(p.get('')!.size >= 10);
});

test('bc - earlier actions in a window are labels only where the teacher chose them', async (t) => {
  const tok = new LmTokenizer(await harvestWords(['alfworld']));
  const ds = await collectDecisions({ env: 'alfworld', episodes: 12, seed: 2, noise: 0.3 });
  const rows = bcRows(ds, tok, { maxLen: 256 }, { skills: 0, hint: 0, injected: 0 }, 1);
  let labelled = 0;
  let skipped = 0;
  rows.forEach((r, i) => {
    const d = ds[i]!;
    const text = tok.decode(r.targets.map((j) => r.prompt[j]!));
    // every labelled token sits inside a clean earlier action
    const clean = d.actions.filter((a, k) => a === d.labels[k]);
    for (const a of clean) if (text.includes(a)) labelled++;
    d.actions.forEach((a, k) => {
      if (a !== d.labels[k] && !clean.includes(a) && text.includes(a)) t.fail(`noise action "${a}" labelled`);
      if (a !== d.labels[k]) skipped++;
    });
    t.true(r.targets.every((j) => j > 0 && j < r.prompt.length));
  });
  t.true(labelled > rows.length, `${labelled} earlier actions labelled over ${rows.length} rows`);
  t.true(skipped > 0);
  t.deepEqual(earlierActionTargets([1, 2, 3], tok, [], []), []);
});

test('explorer - remembers a lamp seen on arrival: after taking the object where a lamp stands, it uses that lamp next', (t) => {
  let cases = 0;
  for (const g of games.filter((x) => /look_at_obj_in_light/.test(x.id))) {
    const r = play(g, 'explorer');
    r.actions.forEach((a, i) => {
      const m = /^take (.+) from (.+)$/.exec(a);
      if (!m) return;
      // the arrival (or opening) observation at the place the object was taken from
      let k = i - 1;
      while (k >= 0 && !r.actions[k]!.endsWith(m[2]!)) k--;
      const arrival = r.observations[k + 1] ?? '';
      const lamp = /\b((?:desklamp|floorlamp) \d+)/.exec(arrival);
      if (!lamp || i + 1 >= r.actions.length) return;
      cases++;
      t.is(r.actions[i + 1], `use ${lamp[1]}`, `${g.id}: took ${m[1]} at ${m[2]} ("${arrival}")`);
    });
  }
  t.true(cases >= 3, `${cases} takes next to a lamp`);
});
