import test from 'ava';
import { loadGames, reset, step, admissible, bleu, snapBleu, PROTOCOLS } from '../../../envs/alfworld/index.ts';

const set = loadGames();
const g = set.games[0]!;

test('ReAct step limit: the episode ends (lost) at step 49', (t) => {
  let s = reset(g, { protocol: 'react' }).state;
  t.is(PROTOCOLS.react.stepLimit, 49);
  for (let i = 1; i <= 49; i++) {
    const r = step(g, s, 'look');
    t.is(r.done, i === 49);
    if (i === 49) t.is(r.info.end, 'step_limit');
    s = r.state;
  }
  t.false(s.won);
});

test('AgentBench: " AVAILABLE ACTIONS: …" suffix, 35-step limit, snapping, 3 identical outputs end the episode', (t) => {
  const r0 = reset(g, { protocol: 'agentbench' });
  t.is(r0.state.protocol.stepLimit, 35);
  const adm = admissible(g, r0.state);
  t.true(r0.observation.endsWith(` AVAILABLE ACTIONS: ${adm.join(',')}`));
  t.false(r0.observation.startsWith('-= Welcome'));
  const r1 = step(g, r0.state, 'Go to desk 1.');
  t.is(r1.info.action, 'go to desk 1');
  t.regex(r1.observation, /^On the desk 1, you see .* AVAILABLE ACTIONS: /);
  // identical outputs: "examine desk 1" three times → third identical raw output ends it
  let s = r1.state;
  const a = step(g, s, 'examine desk 1');
  t.false(a.done);
  const b = step(g, a.state, 'examine desk 1');
  t.false(b.done);
  const c = step(g, b.state, 'examine desk 1');
  t.true(c.done);
  t.is(c.info.end, 'repeat');
  t.is(c.reward, 0);
});

test('BLEU snapping follows nltk method4 behaviour on simple cases', (t) => {
  t.is(bleu('go to desk 1', 'go to desk 1'), 1);
  t.is(bleu('open drawer 2', 'take apple'), 0);
  t.is(snapBleu('go to dresk 1', ['go to desk 1', 'go to drawer 1', 'look']), 'go to desk 1');
  t.is(snapBleu('xyzzy', ['look', 'inventory']), 'xyzzy');
});

test('a finished episode stays finished and unknown commands do nothing', (t) => {
  let s = reset(g, { protocol: 'raw', grammar: 'current' }).state;
  const r = step(g, s, 'take alarmclock 2 from desk 1');
  t.is(r.observation, 'Nothing happens.');
  for (const a of g.walkthrough) s = step(g, s, a).state;
  t.true(s.done);
  const after = step(g, s, 'look');
  t.true(after.done);
  t.is(after.reward, 0);
});
