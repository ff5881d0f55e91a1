import test from 'ava';
import { loadGames, alfworldEnv } from '../../../envs/alfworld/index.ts';
import { CodeSandbox, DEFAULT_SMOKE_GAME, baseHarness, composeHarness, runEpisode, scriptedModel } from '../../../harness/index.ts';
import { BLOCKS, checkBlocks, composeSource, parseComposed, type BlockUse } from '../../../policies/engineer/blocks.ts';
import { listTasks } from '../../../envs/registry.ts';
import { webshopEnv } from '../../../envs/webshop/index.ts';

const NO_PRED = { repeatedAction: false, repeatedObservation: false, nothingHappens: false, invalidFormat: false, sqlError: false, stepLimitNear: false, proposedRepeatsLast: false, proposedInadmissible: false };

function ctx(o: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    hook: 'preDecision',
    env: 'alfworld',
    task: { id: 't', goal: 'put a mug in shelf.', type: 'pick_and_place_simple' },
    seed: 1,
    step: 3,
    limits: { maxSteps: 50, stepsLeft: 47, historyWindow: 20 },
    history: [],
    last: null,
    observation: '',
    proposed: null,
    admissible: null,
    pred: NO_PRED,
    blocks: 0,
    skills: [],
    ...o,
  };
}

/** run a composed hook once in the real QuickJS sandbox */
async function call(hook: 'preDecision' | 'preAction' | 'postFeedback', uses: BlockUse[], c: Record<string, unknown>, nb: Record<string, unknown> = {}): Promise<{ value: unknown; nb: Record<string, unknown> }> {
  const r = await CodeSandbox.compile(composeSource(hook, uses));
  if (!r.ok) throw new Error(r.error);
  const o = r.sandbox!.call(JSON.stringify({ ...c, hook }), JSON.stringify(nb));
  r.sandbox!.dispose();
  if (o.kind !== 'ok') throw new Error(`${o.kind}: ${JSON.stringify(o)}`);
  return { value: o.value, nb: o.nb as Record<string, unknown> };
}

test('blocks - every block, with every parameter choice, compiles in every hook it allows and returns what its hook may return', async (t) => {
  let n = 0;
  for (const b of BLOCKS) {
    for (const hook of b.hooks) {
      const choices = b.params.length ? b.params[0]!.choices.map((_, i) => [i, ...b.params.slice(1).map(() => 0)]) : [[]];
      for (const params of choices) {
        const uses = [{ id: b.id, params }];
        const src = composeSource(hook, uses);
        t.deepEqual(parseComposed(hook, src), uses, 'the source reads back');
        const { value } = await call(hook as 'preDecision', uses, ctx({ step: 0, observation: 'You are in the middle of a room. Looking quickly around you, you see a cabinet 1, a drawer 2, and a shelf 1.', last: { action: 'go to drawer 2', observation: 'Nothing happens.' }, proposed: hook === 'preAction' ? { text: 'go to drawer 9', action: 'go to drawer 9' } : null, admissible: ['go to cabinet 1', 'go to drawer 2', 'look'], pred: { ...NO_PRED, nothingHappens: true, sqlError: hook === 'postFeedback' } }));
        if (value !== null) {
          if (hook === 'preDecision') t.is(typeof value, 'string');
          else if (hook === 'preAction') t.true(['block_and_prompt', 'rewrite_action', 'force_action'].includes((value as { type: string }).type), JSON.stringify(value));
          else t.true(typeof value === 'string' || (value as { type: string }).type === 'force_action');
        }
        n++;
      }
    }
  }
  t.true(n > 40, `${n} block/hook/parameter combinations`);
});

test('blocks - closest_admissible rewrites a near miss above its threshold and leaves far or admissible proposals alone', async (t) => {
  const adm = ['go to shelf 1', 'go to drawer 2', 'take mug 1 from shelf 1', 'look'];
  const rw = (action: string, min: number) => call('preAction', [{ id: 'closest_admissible', params: [min] }], ctx({ proposed: { text: action, action }, admissible: adm }));
  t.deepEqual((await rw('go to shelf 4', 2)).value, { type: 'rewrite_action', action: 'go to shelf 1' });
  t.deepEqual((await rw('take mug 2 from shelf 1', 2)).value, { type: 'rewrite_action', action: 'take mug 1 from shelf 1' });
  t.is((await rw('go to shelf 1', 0)).value, null, 'an admissible proposal is not touched');
  t.is((await rw('inventory please now', 4)).value, null, 'nothing is similar enough at 0.75');
  // WebShop: the admissible actions are clicks; a search is free text, not a misspelled click
  const page = ['click[search]', 'click[back to search]', 'click[b09mdy82t4]'];
  const ws = (action: string, min: number) => call('preAction', [{ id: 'closest_admissible', params: [min] }], ctx({ proposed: { text: action, action }, admissible: page }));
  t.is((await ws('search[noise]', 0)).value, null, 'search[noise] is not rewritten to click[search]');
  t.is((await ws('search[back to search]', 0)).value, null);
  t.deepEqual((await ws('click[serch]', 0)).value, { type: 'rewrite_action', action: 'click[search]' }, 'a click that is not on the page still is');
  t.deepEqual((await ws('click[back to the search]', 2)).value, { type: 'rewrite_action', action: 'click[back to search]' });
});

test('blocks - trackers keep the notebook once per step; hints read it; notes replace rather than accumulate', async (t) => {
  const uses: BlockUse[] = [{ id: 'track_held', params: [] }, { id: 'track_visited', params: [0] }, { id: 'track_failed', params: [0] }, { id: 'notes', params: [1] }];
  let nb: Record<string, unknown> = {};
  const steps: [string, string][] = [['go to shelf 1', 'On the shelf 1, you see a mug 1.'], ['take mug 1 from shelf 1', 'You pick up the mug 1 from the shelf 1.'], ['go to shelf 9', 'Nothing happens.'], ['go to desk 1', 'On the desk 1, you see a pen 1.']];
  let hint: unknown = null;
  for (let i = 0; i < steps.length; i++) {
    const [action, observation] = steps[i]!;
    const c = ctx({ step: i + 1, last: { action, observation }, pred: { ...NO_PRED, nothingHappens: observation.startsWith('Nothing') } });
    // the same step seen twice (postFeedback, then preDecision) is counted once
    ({ nb } = await call('postFeedback', uses.slice(0, 3), c, nb));
    ({ value: hint, nb } = await call('preDecision', uses, c, nb));
  }
  t.is(nb.held, 'mug 1');
  t.deepEqual(nb.visited, ['shelf 1', 'desk 1']);
  t.deepEqual(nb.failed, ['go to shelf 9']);
  t.is(hint, 'Notes: holding mug 1. checked shelf 1, desk 1. did nothing: go to shelf 9.');
});

test('blocks - sql_explain names the task table and headers after an SQL error', async (t) => {
  const goal = 'How many wins? The name of this table is Medal Tally, and the headers of this table are Rank,Nation,Gold.';
  const run = (observation: string) => call('postFeedback', [{ id: 'sql_explain', params: [] }], ctx({ env: 'dbbench', task: { id: 'd', goal, type: 'counting' }, observation, pred: { ...NO_PRED, sqlError: true } }));
  t.is((await run("1146 (42S02): Table 'db.medals' doesn't exist")).value, 'There is no table medals; the table is `Medal Tally`.');
  t.is((await run("1054 (42S22): Unknown column 'wins' in 'field list'")).value, 'There is no column wins; the columns are Rank,Nation,Gold. Quote text values with single quotes.');
});

test('blocks - in an ALFWorld episode a composed hook rewrites the model\'s impossible action and is counted as an intervention', async (t) => {
  const env = alfworldEnv(loadGames().get(DEFAULT_SMOKE_GAME));
  const harness = composeHarness(baseHarness(), { code: [{ name: 'closest', hook: 'preAction', source: composeSource('preAction', [{ id: 'closest_admissible', params: [2] }]) }] });
  const rec = await runEpisode(env, { model: scriptedModel(['go to sidetable 7', 'look']), harness, maxSteps: 2, seed: 1 });
  t.true(rec.steps[0]!.rewritten, JSON.stringify(rec.steps[0]));
  t.regex(rec.steps[0]!.action, /^go to sidetable \d$/);
  t.is(rec.interventions?.executed, 1);
});

test('blocks - a block list the library does not admit is refused, and a hand-edited source is not read as composed', (t) => {
  t.true(checkBlocks('preAction', [{ id: 'hint_visited', params: [0] }]).some((e) => /runs in preDecision/.test(e)));
  t.true(checkBlocks('preDecision', [{ id: 'loop_hint', params: [7] }]).some((e) => /choice 0…2/.test(e)));
  t.true(checkBlocks('preDecision', [{ id: 'nope', params: [] }]).some((e) => /unknown block/.test(e)));
  t.throws(() => composeSource('init', [{ id: 'loop_hint', params: [0] }]), { message: /do not run at init/ });
  const src = composeSource('preDecision', [{ id: 'loop_hint', params: [0] }]);
  t.is(parseComposed('preDecision', src.replace('Try something different', 'Try harder')), null);
  t.is(parseComposed('preDecision', 'function hook(ctx, nb) { return null; }'), null);
});

test('blocks - explore_unvisited sends an impossible "go to" (and, when revisit, a way back) to a place not visited yet', async (t) => {
  const adm = ['go to cabinet 1', 'go to drawer 2', 'go to shelf 1', 'look'];
  const go = (action: string, when: number, visited: string[]) => call('preAction', [{ id: 'explore_unvisited', params: [when] }], ctx({ proposed: { text: action, action }, admissible: adm }), { visited });
  t.deepEqual((await go('go to shelf 4', 0, ['cabinet 1'])).value, { type: 'rewrite_action', action: 'go to drawer 2' });
  t.is((await go('go to cabinet 1', 0, ['cabinet 1'])).value, null, 'inadmissible only: a revisit is left alone');
  t.deepEqual((await go('go to cabinet 1', 1, ['cabinet 1'])).value, { type: 'rewrite_action', action: 'go to drawer 2' });
  t.is((await go('go to shelf 4', 0, ['cabinet 1', 'drawer 2', 'shelf 1'])).value, null, 'nothing unvisited is left');
  t.is((await go('take mug 1 from shelf 1', 0, [])).value, null, 'only "go to" proposals');
});

test('blocks - take_goal_object takes the goal\'s kind of object when it is in reach and nothing is held', async (t) => {
  const adm = ['go to shelf 1', 'take cd 2 from shelf 1', 'take mug 1 from shelf 1', 'take pen 3 from shelf 1'];
  const take = (goal: string, nb: Record<string, unknown> = {}, action = 'go to shelf 1') => call('preAction', [{ id: 'take_goal_object', params: [] }], ctx({ task: { id: 't', goal, type: 'x' }, proposed: { text: action, action }, admissible: adm }), nb);
  t.deepEqual((await take('put a mug in shelf.')).value, { type: 'rewrite_action', action: 'take mug 1 from shelf 1' });
  t.deepEqual((await take('examine the pen with the desklamp.')).value, { type: 'rewrite_action', action: 'take pen 3 from shelf 1' });
  t.is((await take('put a mug in shelf.', { held: 'cd 2' })).value, null, 'something is held');
  t.is((await take('put a pencil in drawer.')).value, null, 'pen is not pencil: whole words only');
  t.is((await take('put a mug in shelf.', {}, 'take cd 2 from shelf 1')).value, null, 'a take of its own is left alone');
});

test('blocks - finish_goal, holding the goal object, plays the action that finishes the goal: transform first, then put it where the goal says', async (t) => {
  const last = (action: string, observation: string) => ({ step: 2, action, observation });
  const fin = (goal: string, adm: string[], nb: Record<string, unknown>, o: Record<string, unknown> = {}) =>
    call('preAction', [{ id: 'finish_goal', params: [] }], ctx({ task: { id: 't', goal, type: 'x' }, proposed: { text: 'go to shelf 1', action: 'go to shelf 1' }, admissible: adm, ...o }), nb);
  // its own tracking: the take it saw makes the object held
  const took = await fin('put a mug in shelf.', ['go to desk 1', 'put mug 1 in/on shelf 1', 'put mug 1 in/on desk 1'], {}, { last: last('take mug 1 from desk 1', 'You pick up the mug 1 from the desk 1.') });
  t.deepEqual(took.value, { type: 'rewrite_action', action: 'put mug 1 in/on shelf 1' }, 'the receptacle the goal names, not the desk');
  t.is(took.nb._fgHeld, 'mug 1');
  t.is((await fin('put a mug in shelf.', ['put mug 1 in/on shelf 1'], {}, { last: last('take mug 1 from desk 1', 'Nothing happens.') })).value, null, 'a take that did nothing holds nothing');
  // a goal that asks for a transform: heat before putting, put after heating
  const adm = ['heat egg 1 with microwave 1', 'put egg 1 in/on microwave 1', 'go to fridge 1'];
  t.deepEqual((await fin('heat some egg and put it in fridge.', adm, { held: 'egg 1' })).value, { type: 'rewrite_action', action: 'heat egg 1 with microwave 1' });
  t.is((await fin('heat some egg and put it in fridge.', adm, { held: 'egg 1', _fgDone: true })).value, null, 'heated already, and the fridge is not in reach: nothing to finish here');
  t.deepEqual((await fin('put a hot egg in fridge.', ['put egg 1 in/on fridge 1'], { held: 'egg 1', _fgDone: true })).value, { type: 'rewrite_action', action: 'put egg 1 in/on fridge 1' });
  t.is((await fin('put a hot egg in fridge.', ['put egg 1 in/on fridge 1'], { held: 'egg 1' })).value, null, 'not heated yet: no put');
  t.deepEqual((await fin('put some egg on microwave.', adm, { held: 'egg 1' })).value, { type: 'rewrite_action', action: 'put egg 1 in/on microwave 1' }, 'no transform asked: put it on the microwave, not heat it');
  // a lamp the goal names
  t.deepEqual((await fin('look at alarmclock under the desklamp.', ['use desklamp 2', 'go to desk 1'], { held: 'alarmclock 3' })).value, { type: 'rewrite_action', action: 'use desklamp 2' });
  // nothing held, or the proposal already is the finishing action
  t.is((await fin('put a mug in shelf.', ['put mug 1 in/on shelf 1'], {})).value, null, 'nothing held');
  t.is((await call('preAction', [{ id: 'finish_goal', params: [] }], ctx({ task: { id: 't', goal: 'put a mug in shelf.', type: 'x' }, proposed: { text: 'put mug 1 in/on shelf 1', action: 'put mug 1 in/on shelf 1' }, admissible: ['put mug 1 in/on shelf 1'] }), { held: 'mug 1' })).value, null, 'already the action');
  t.is((await fin('put a mug in shelf.', ['put mug 1 in/on shelf 1'], { held: 'mug 1' }, { last: last('put mug 1 in/on shelf 1', 'You put the mug 1 in/on the shelf 1.') })).nb._fgHeld, null, 'a put that worked empties its hands');
});

test('blocks - search_goal rewrites a WebShop search to the instruction\'s words; select_options clicks a named option before buying', async (t) => {
  const goal = 'i am looking for a x-large black t-shirt with long sleeves, and price lower than 30.00 dollars';
  const q = (action: string, w: number) => call('preAction', [{ id: 'search_goal', params: [w] }], ctx({ env: 'webshop', task: { id: 'w', goal, type: 'shop' }, proposed: { text: action, action } }));
  t.deepEqual((await q('search[shirt shirt black]', 0)).value, { type: 'rewrite_action', action: 'search[a x large black t shirt]' });
  t.deepEqual((await q('search[shirt]', 2)).value, { type: 'rewrite_action', action: 'search[a x large black t shirt with long sleeves]' });
  t.is((await q('click[buy now]', 2)).value, null);
  const adm = ['click[back to search]', 'click[< prev]', 'click[description]', 'click[buy now]', 'click[large]', 'click[x-large]', 'click[black]', 'click[white]'];
  const buy = (history: string[]) => call('preAction', [{ id: 'select_options', params: [] }], ctx({ env: 'webshop', task: { id: 'w', goal, type: 'shop' }, proposed: { text: 'click[buy now]', action: 'click[buy now]' }, admissible: adm, history: history.map((action, i) => ({ step: i + 1, action, observation: '' })) }));
  t.deepEqual((await buy(['search[shirt]', 'click[<product-1>]'])).value, { type: 'rewrite_action', action: 'click[x-large]' }, 'the longest named option first');
  t.deepEqual((await buy(['search[shirt]', 'click[<product-1>]', 'click[x-large]'])).value, { type: 'rewrite_action', action: 'click[black]' }, '"large" is inside the clicked "x-large": not clicked again');
  t.is((await buy(['search[shirt]', 'click[<product-1>]', 'click[x-large]', 'click[black]'])).value, null, 'every named option is clicked: the purchase goes through');
});

test('blocks - in a WebShop episode a rewritten search (a free-form action the env admits) is played and counted', async (t) => {
  const id = listTasks('webshop', 'dev')[0]!;
  const harness = composeHarness(baseHarness(), { code: [{ name: 'query', hook: 'preAction', source: composeSource('preAction', [{ id: 'search_goal', params: [1] }]) }] });
  const rec = await runEpisode(webshopEnv(id), { model: scriptedModel(['search[zzz qqq]', 'click[back to search]', 'search[again]']), harness, maxSteps: 3, seed: 1 });
  t.true(rec.steps[0]!.rewritten, JSON.stringify(rec.steps[0]));
  t.regex(rec.steps[0]!.action, /^search\[[a-z0-9 ]+\]$/);
  t.not(rec.steps[0]!.action, 'search[zzz qqq]');
  t.is(rec.interventions?.executed, 1, 'the third action, a search again, is over the cap (1 of 3 at rate 0.5) and played as proposed');
  // a rewrite to a search where the page has no search bar is not admitted: it is ignored
  const clickOnly = composeHarness(baseHarness(), { rules: [{ hook: 'preAction', when: { path: 'proposed.action', equals: 'click[<product-1>]' }, effect: { type: 'rewrite_action', action: 'search[shoes]' } }] });
  const r2 = await runEpisode(webshopEnv(id), { model: scriptedModel(['search[shoes]', 'click[<product-1>]']), harness: clickOnly, maxSteps: 2, seed: 1 });
  t.false(r2.steps[1]!.rewritten);
  t.is(r2.steps[1]!.action, 'click[<product-1>]');
});
