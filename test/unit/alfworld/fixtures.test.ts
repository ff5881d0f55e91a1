import test from 'ava';
import { readFileSync } from 'node:fs';
import { Rng } from '../../../cluster/rng.ts';
import { loadGames, reset, step, admissible } from '../../../envs/alfworld/index.ts';

const set = loadGames();
const fx = JSON.parse(readFileSync(new URL('./fixtures/react-transcripts.json', import.meta.url), 'utf8')) as {
  fixtures: { key: string; initial: string; steps: { action: string; observation: string }[] }[];
};

/** Abstract a text to its template: lists of "a x N" → LIST, other "x N" names → X. */
function shape(s: string): string {
  return s
    .trim()
    .replace(/\ba [a-z]+ \d+(?:, a [a-z]+ \d+)*(?:,? and a [a-z]+ \d+)?/g, 'LIST')
    .replace(/\b[a-z]+ \d+\b/g, 'X')
    .replace(/Your task is to: .*/, 'Your task is to: TASK');
}

// every template the engine produces, collected from seeded random walks on the shipped games
const engineShapes = new Set<string>();
for (const g of set.games.filter((_, i) => i % 3 === 0)) {
  const rng = new Rng(`shapes:${g.id}`);
  let r = reset(g, { protocol: 'react' });
  engineShapes.add(shape(r.observation));
  let s = r.state;
  for (let i = 0; i < 30 && !s.done; i++) {
    const adm = admissible(g, s);
    const a = rng.pick(adm.filter((x) => x !== 'help'));
    const o = step(g, s, a);
    engineShapes.add(shape(o.observation));
    s = o.state;
  }
  let w = reset(g, { protocol: 'react' }).state;
  for (const a of g.walkthrough) {
    const o = step(g, w, a.replace(/^move (.+) to (.+)$/, 'put $1 in/on $2'));
    engineShapes.add(shape(o.observation));
    w = o.state;
  }
  engineShapes.add(shape(step(g, s, 'jump around').observation));
}

test('fixtures: 18 ReAct transcripts were loaded', (t) => {
  t.is(fx.fixtures.length, 18);
  t.true(fx.fixtures.every((f) => f.steps.length > 3));
});

test('every observation in the real ReAct transcripts has a template the engine produces', (t) => {
  const missing: string[] = [];
  let n = 0;
  for (const f of fx.fixtures) {
    for (const o of [f.initial, ...f.steps.map((s) => s.observation)]) {
      n++;
      if (!engineShapes.has(shape(o))) missing.push(`${f.key}: ${o} [${shape(o)}]`);
    }
  }
  t.true(n > 200);
  t.deepEqual(missing, []);
});

test('the engine numbers and orders receptacles as the real env does (react_puttwo_0 room matches valid_seen 311 exactly)', (t) => {
  const f = fx.fixtures.find((x) => x.key === 'react_puttwo_0')!;
  const g = set.get('valid_seen/pick_two_obj_and_place-CreditCard-None-Dresser-311/trial_T20190907_201917_045715');
  t.is(reset(g, { protocol: 'react' }).observation, f.initial);
});

test('object lists in transcripts are in demangled order (name ascending, instance number descending)', (t) => {
  for (const f of fx.fixtures) {
    for (const s of f.steps) {
      const m = /you see (.*)\.\s*$/.exec(s.observation);
      if (!m || m[1] === 'nothing') continue;
      const items = m[1]!.split(/, and |, /).map((x) => x.replace(/^a /, '').split(' '));
      const keys = items.map(([n, k]) => [n!, -Number(k)] as const);
      const sorted = [...keys].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : a[1] - b[1]));
      t.deepEqual(keys, sorted);
    }
  }
  // and the engine produces the same ordering
  const g = set.games[0]!;
  const o = step(g, reset(g, { protocol: 'react' }).state, 'go to desk 1').observation;
  t.is(o, 'On the desk 1, you see a alarmclock 2, a book 1, a bowl 1, a cd 2, a desklamp 1, a mug 2, a mug 1, a pen 2, and a pen 1.');
});

test('texts: open/close, take, put (legacy), examine, inventory, use lamp, unknown command', (t) => {
  const g = set.get('valid_seen/pick_two_obj_and_place-CreditCard-None-Dresser-311/trial_T20190907_201917_045715');
  let s = reset(g, { protocol: 'react' }).state;
  const go = (a: string) => {
    const r = step(g, s, a);
    s = r.state;
    return r.observation;
  };
  t.is(go('inventory'), 'You are not carrying anything.');
  t.regex(go('go to drawer 1'), /^The drawer 1 is closed\.$/);
  t.regex(go('open drawer 1'), /^You open the drawer 1\. The drawer 1 is open\. In it, you see (nothing|a .+)\.$/);
  t.is(go('close drawer 1'), 'You close the drawer 1.');
  t.is(go('fly to the moon'), 'Nothing happens.');
  t.regex(go('  open drawer 1 '), /^You open the drawer 1\./, 'surrounding blanks are stripped as TextWorld does');
  t.is(go('Open drawer 1'), 'Nothing happens.', 'commands are case-sensitive in the raw env');
  // walkthrough: take → "You pick up", put → "You put the X in/on the Y."
  let s2 = reset(g, { protocol: 'react' }).state;
  const seen: string[] = [];
  for (const a of g.walkthrough) {
    const r = step(g, s2, a.replace(/^move (.+) to (.+)$/, 'put $1 in/on $2'));
    seen.push(r.observation);
    if (a.startsWith('take ')) {
      const o = a.split(' ')[1]! + ' ' + a.split(' ')[2]!;
      t.is(step(g, r.state, 'inventory').observation, `You are carrying: a ${o}.`);
      t.is(step(g, r.state, `examine ${o}`).observation, `There's nothing special about ${o}.`);
    }
    s2 = r.state;
  }
  t.true(seen.some((o) => /^You pick up the creditcard \d+ from the .+\.$/.test(o)));
  t.true(seen.some((o) => /^You put the creditcard \d+ in\/on the dresser 1\.$/.test(o)));
});

test('texts: heat/cool/clean with the right appliance, use lamp, help only in the current grammar', (t) => {
  const byType = (tt: string) => set.games.find((g) => g.taskType === tt)!;
  const check = (tt: string, re: RegExp) => {
    const g = byType(tt);
    let s = reset(g, { protocol: 'react' }).state;
    const seen: string[] = [];
    for (const a of g.walkthrough) {
      const r = step(g, s, a.replace(/^move (.+) to (.+)$/, 'put $1 in/on $2'));
      seen.push(r.observation);
      s = r.state;
    }
    t.true(seen.some((o) => re.test(o)), `${tt}: ${seen.join(' | ')}`);
  };
  check('pick_heat_then_place_in_recep', /^You heat the [a-z]+ \d+ using the microwave \d+\.$/);
  check('pick_cool_then_place_in_recep', /^You cool the [a-z]+ \d+ using the fridge \d+\.$/);
  check('pick_clean_then_place_in_recep', /^You clean the [a-z]+ \d+ using the sinkbasin \d+\.$/);
  check('look_at_obj_in_light', /^You turn on the (desklamp|floorlamp) \d+\.$/);
  const g = set.games[0]!;
  t.is(step(g, reset(g, { protocol: 'react', grammar: 'legacy' }).state, 'help').observation, 'Nothing happens.');
  t.regex(step(g, reset(g, { protocol: 'react', grammar: 'current' }).state, 'help').observation, /^\nAvailable commands:\n  look:/);
  t.false(admissible(g, reset(g, { grammar: 'legacy' }).state).includes('help'));
  t.true(admissible(g, reset(g, { grammar: 'current' }).state).includes('help'));
  // current grammar: "You arrive at desk 1." then the receptacle; legacy: "You arrive at loc N." (stripped by the react protocol)
  t.regex(step(g, reset(g, { protocol: 'raw', grammar: 'current' }).state, 'go to desk 1').observation, /^You arrive at desk 1\. On the desk 1, you see/);
  t.regex(step(g, reset(g, { protocol: 'raw', grammar: 'legacy' }).state, 'go to desk 1').observation, /^You arrive at loc \d+\. On the desk 1, you see/);
  t.regex(step(g, reset(g, { protocol: 'react', grammar: 'legacy' }).state, 'go to desk 1').observation, /^On the desk 1, you see/);
});
