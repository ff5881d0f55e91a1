import test from 'ava';
import { loadGames } from '../../../envs/alfworld/index.ts';
import { loadTasks } from '../../../envs/dbbench/index.ts';
import { DEFAULT_SMOKE_GAME, baseHarness, composeHarness, expertModel, runEpisode, scriptedModel, type DecisionContext, type EpisodeRecord, type HarnessError } from '../../../harness/index.ts';
import { alfworldEnv } from '../../../envs/alfworld/index.ts';
import { dbbenchEnv } from '../../../envs/dbbench/index.ts';

const game = loadGames().get(DEFAULT_SMOKE_GAME);
const env = alfworldEnv(game);
const patched = (p: unknown) => composeHarness(baseHarness(), p);
const hook = (r: EpisodeRecord, id: string) => r.hooks.find((h) => h.id === id)!;

test('runtime - the base harness runs the expert to a win and records every step', async (t) => {
  const r = await runEpisode(env, { model: expertModel(), seed: 3 });
  t.is(r.outcome.status, 'won');
  t.is(r.outcome.reward, 1);
  t.is(r.steps.length, r.outcome.steps);
  t.is(r.env, 'alfworld');
  t.is(r.taskId, game.id);
  t.is(r.seed, 3);
  t.is(r.harness.layers.length, 1);
  t.true(r.goal.length > 0);
  t.deepEqual(JSON.parse(JSON.stringify(r)), r, 'the record is plain data');
});

test('preDecision - one hint goes into that decision only; a second hint is clamped', async (t) => {
  const seen: string[][] = [];
  const model = scriptedModel((ctx: DecisionContext) => {
    seen.push(ctx.messages.filter((m) => m.content.startsWith('Hint:')).map((m) => m.content));
    return 'jump';
  });
  const r = await runEpisode(env, {
    model,
    maxSteps: 3,
    harness: patched({ rules: [
      { name: 'a', hook: 'preDecision', when: { pred: 'nothingHappens' }, effect: { type: 'hint', message: 'step {{step}}: {{last.action}} did nothing' } },
      { name: 'b', hook: 'preDecision', when: { pred: 'nothingHappens' }, effect: { type: 'hint', message: 'second' } },
    ] }),
  });
  t.deepEqual(seen, [[], ['Hint: step 1: jump did nothing'], ['Hint: step 2: jump did nothing']]);
  t.is(r.steps[1]?.hint, 'step 1: jump did nothing');
  t.is(hook(r, 'L1.a').counters.hinted, 2);
  t.is(hook(r, 'L1.a').counters.noEffect, 1);
  t.is(hook(r, 'L1.b').counters.clamped, 2);
  t.true(r.steps[1]?.pred.nothingHappens);
  t.true(r.steps[1]?.pred.repeatedAction);
});

test('preAction - block_and_prompt re-prompts, at most twice a step, then the proposal goes through', async (t) => {
  const prompts: string[] = [];
  const model = scriptedModel((ctx) => {
    prompts.push(ctx.messages[ctx.messages.length - 1]!.content);
    return 'look';
  });
  const r = await runEpisode(env, { model, maxSteps: 2, harness: patched({ code: [{ hook: 'preAction', source: "function hook(ctx, nb) { return {type: 'block_and_prompt', message: 'blocked ' + ctx.blocks}; }" }] }) });
  t.is(r.steps.length, 2);
  t.is(r.steps[0]?.blocked, 2);
  t.is(prompts[1], 'blocked 0');
  t.is(prompts[2], 'blocked 1');
  const c = hook(r, 'L1.code[0]').counters;
  t.is(c.blocked, 4);
  t.is(c.clamped, 2);
  t.is(c.ran, 6);
});

test('preAction - rewrite_action and force_action take admissible actions and clamp the rest', async (t) => {
  const r = await runEpisode(env, {
    model: scriptedModel(['jump', 'dance', 'look']),
    maxSteps: 3,
    // no intervention cap here (two of three actions are the patch's); the cap has its own test
    maxInterventionRate: 1,
    harness: patched({ rules: [
      { name: 'rw', hook: 'preAction', when: { path: 'proposed.action', equals: 'jump' }, effect: { type: 'rewrite_action', action: 'inventory' } },
      { name: 'bad', hook: 'preAction', when: { path: 'proposed.action', equals: 'dance' }, effect: { type: 'force_action', action: 'fly away' } },
      { name: 'fo', hook: 'preAction', when: { path: 'proposed.action', equals: 'look' }, effect: { type: 'force_action', action: 'inventory' } },
    ] }),
  });
  t.deepEqual(r.steps.map((s) => [s.proposal, s.action, s.rewritten, s.forced]), [
    ['jump', 'inventory', true, false],
    ['dance', 'dance', false, false],
    ['look', 'inventory', false, true],
  ]);
  t.true(r.steps[1]?.invalidFormat === false);
  t.is(hook(r, 'L1.rw').counters.rewrote, 1);
  t.is(hook(r, 'L1.bad').counters.clamped, 1);
  t.regex(hook(r, 'L1.bad').errors[0] ?? '', /not an admissible action/);
  t.is(hook(r, 'L1.fo').counters.forced, 1);
  // each step names the entry whose effect took hold; a clamped effect is not there
  t.deepEqual(r.steps.map((s) => s.effects), [
    [{ entry: 'L1.rw', effect: 'rewrite', text: 'inventory' }],
    undefined,
    [{ entry: 'L1.fo', effect: 'force', text: 'inventory' }],
  ]);
});

test('step effects - hints, injections, blocks and a postFeedback force are recorded on the step they changed, with their entry', async (t) => {
  const r = await runEpisode(env, {
    model: scriptedModel(['jump', 'look', 'look', 'look']),
    maxSteps: 3,
    maxInterventionRate: 1,
    harness: patched({ rules: [
      { name: 'h', hook: 'preDecision', when: { pred: 'nothingHappens' }, effect: { type: 'hint', message: 'try look' } },
      { name: 'blk', hook: 'preAction', when: { all: [{ path: 'proposed.action', equals: 'jump' }, { path: 'blocks', equals: 0 }] }, effect: { type: 'block_and_prompt', message: 'no jumping' } },
      { name: 'inj', hook: 'postFeedback', when: { path: 'step', equals: 1 }, effect: { type: 'inject_hint', message: 'noted' } },
      { name: 'pf', hook: 'postFeedback', when: { path: 'step', equals: 2 }, effect: { type: 'force_action', action: 'inventory' } },
    ] }),
  });
  const eff = r.steps.map((s) => (s.effects ?? []).map((e) => `${e.entry}:${e.effect}:${e.text}`));
  t.deepEqual(eff[0], ['L1.blk:block:no jumping', 'L1.inj:inject:noted']);
  t.true(r.steps[2]!.forced);
  t.true(eff[2]!.includes('L1.pf:force:inventory'), JSON.stringify(eff));
  // vanilla steps carry no effects field at all, so unpatched records are as before
  const v = await runEpisode(env, { model: scriptedModel(['jump', 'look']), maxSteps: 2 });
  t.true(v.steps.every((s) => !('effects' in s)));
});

test('postFeedback - inject_hint stays in the conversation; force_action takes the next step without the model', async (t) => {
  let calls = 0;
  const lastMsgs: string[] = [];
  const model = scriptedModel((ctx) => {
    calls++;
    lastMsgs.push(ctx.messages[ctx.messages.length - 1]!.content);
    return 'look';
  });
  const r = await runEpisode(env, {
    model,
    maxSteps: 4,
    harness: patched({ rules: [
      { name: 'f', hook: 'postFeedback', when: { path: 'step', equals: 1 }, effect: { type: 'force_action', action: 'inventory' } },
      { name: 'i', hook: 'postFeedback', when: { path: 'last.action', equals: 'inventory' }, effect: { type: 'inject_hint', message: 'you checked your inventory' } },
    ] }),
  });
  t.is(calls, 3);
  t.deepEqual(r.steps.map((s) => [s.proposal, s.action, s.forced]), [['look', 'look', false], [null, 'inventory', true], ['look', 'look', false], ['look', 'look', false]]);
  t.is(r.steps[1]?.injected, 'you checked your inventory');
  t.is(lastMsgs[1], 'you checked your inventory');
});

test('init - skills and a tool hint reach the system message; notes start the notebook; code hooks share it', async (t) => {
  let system = '';
  const model = scriptedModel((ctx) => {
    system = ctx.messages[0]!.content;
    return 'look';
  });
  const r = await runEpisode(env, {
    model,
    maxSteps: 3,
    harness: patched({
      skills: ['Skill one.'],
      rules: [
        { hook: 'init', effect: { type: 'note', key: 'count', value: 10 } },
        { hook: 'init', effect: { type: 'tool_hint', text: 'Use look when lost.' } },
        { name: 'n', hook: 'preDecision', when: { path: 'nb.count', gte: 12 }, effect: { type: 'hint', message: 'count is {{nb.count}}' } },
      ],
      code: [
        { hook: 'init', source: "function hook(ctx, nb) { return {skills: ['Skill two for ' + ctx.task.type]}; }" },
        { hook: 'postFeedback', source: 'function hook(ctx, nb) { nb.count += 1; return null; }' },
      ],
    }),
  });
  t.regex(system, /Skills:\n1\. Skill one\.\n2\. Skill two for pick_and_place_simple/);
  t.regex(system, /Tool hint: Use look when lost\./);
  t.deepEqual(r.skills, ['Skill one.', 'Skill two for pick_and_place_simple']);
  t.is(r.notebook.count, 13);
  t.is(r.steps[2]?.hint, 'count is 12');
});

test('predicates - invalid format, step limit near', async (t) => {
  const r = await runEpisode(env, { model: scriptedModel(['', 'look']), maxSteps: 10, harness: patched({ rules: [{ name: 'inv', hook: 'preAction', when: { pred: 'invalidFormat' }, effect: { type: 'block_and_prompt', message: 'Reply with one action.' } }] }) });
  t.is(hook(r, 'L1.inv').counters.blocked, 1);
  t.is(r.steps[0]?.action, 'look');
  t.false(r.steps[0]?.pred.stepLimitNear);
  t.false(r.steps[5]?.pred.stepLimitNear);
  t.true(r.steps[6]?.pred.stepLimitNear);
  t.is(r.outcome.status, 'step_limit');
});

test('determinism - same patch, game, seed and scripted model give identical records', async (t) => {
  const p = patched({
    rules: [{ hook: 'preDecision', when: { pred: 'repeatedObservation' }, effect: { type: 'hint', message: 'again: {{observation}}' } }],
    code: [
      { hook: 'postFeedback', source: "function hook(ctx, nb) { nb.r = (nb.r || []).concat([Math.random(), Date.now()]); return Math.random() < 0.5 ? 'coin' : null; }" },
      { hook: 'preAction', source: "function hook(ctx, nb) { return ctx.step % 3 === 2 ? {type: 'rewrite_action', action: 'inventory'} : null; }" },
    ],
  });
  const script = ['go to desk 1', 'look', 'look', 'examine desk 1', 'go to shelf 1', 'look', 'look'];
  const a = await runEpisode(env, { model: scriptedModel(script), harness: p, seed: 7, maxSteps: 7 });
  const b = await runEpisode(env, { model: scriptedModel(script), harness: p, seed: 7, maxSteps: 7 });
  t.deepEqual(a, b);
  const c = await runEpisode(env, { model: scriptedModel(script), harness: p, seed: 8, maxSteps: 7 });
  t.notDeepEqual(a.notebook, c.notebook, 'the seed reaches the sandbox RNG');
  t.is(JSON.stringify(a), JSON.stringify(b));
});

test('dbbench - the SQL error predicate fires and a rule hints; the expert wins through the adapter', async (t) => {
  const [task] = loadTasks({ file: 'v0.2/dev' });
  const bad = 'Action: Operation\n```sql\nSELECT nope FROM nowhere\n```';
  const r = await runEpisode(dbbenchEnv(task!), {
    model: scriptedModel([bad, 'Action: Answer\nFinal Answer: ["x"]']),
    harness: patched({ rules: [{ name: 'sql', hook: 'postFeedback', when: { pred: 'sqlError' }, effect: { type: 'inject_hint', message: 'Check the table name with SHOW TABLES.' } }] }),
  });
  t.true(r.steps[0]?.pred.sqlError);
  t.is(r.steps[0]?.injected, 'Check the table name with SHOW TABLES.');
  t.is(r.outcome.status, 'lost');
  const w = await runEpisode(dbbenchEnv(task!), { model: expertModel() });
  t.is(w.outcome.status, 'won');
  t.is(w.env, 'dbbench');
});

test('errors - bad options are typed; a failing model ends the episode as model_error', async (t) => {
  const e1 = await t.throwsAsync(runEpisode(env, {} as never));
  t.is((e1 as HarnessError).code, 'HARNESS_BAD_OPTION');
  const e2 = await t.throwsAsync(runEpisode(env, { model: expertModel(), sandbox: { stackBytes: 1 << 20 } }));
  t.regex((e2 as Error).message, /sandbox\.stackBytes must be at most 262144/);
  const e3 = await t.throwsAsync(runEpisode(env, { model: expertModel(), maxBlocksPerStep: -1 }));
  t.regex((e3 as Error).message, /options\.maxBlocksPerStep must be an integer ≥ 0/);
  const r = await runEpisode(env, { model: { name: 'boom', decide: () => Promise.reject(new Error('backend down')) } });
  t.is(r.outcome.status, 'model_error');
  t.regex(r.outcome.error ?? '', /backend down/);
});

test('interventions - counted per episode; the cap clamps force and rewrite beyond max(1, rate × t) and the model acts', async (t) => {
  // a rule that rewrites every proposal to inventory (a scripted solver in miniature)
  const solver = patched({ rules: [{ name: 'all', hook: 'preAction', when: { path: 'proposed.action', equals: 'look' }, effect: { type: 'rewrite_action', action: 'inventory' } }] });
  const run = (rate?: number) => runEpisode(env, { model: scriptedModel(Array.from({ length: 8 }, () => 'look')), maxSteps: 8, harness: solver, ...(rate === undefined ? {} : { maxInterventionRate: rate }) });
  const free = await run(1);
  t.is(free.steps.filter((s) => s.rewritten).length, 8);
  t.like(free.interventions, { executed: 8, rate: 1, clamped: 0, cap: 1 });
  // the default cap: half; the t-th action may be the patch's while interventions ≤ max(1, t / 2)
  const capped = await run();
  t.deepEqual(capped.steps.map((s) => (s.rewritten ? 'R' : '.')).join(''), 'R..R.R.R');
  t.like(capped.interventions, { executed: 4, rate: 0.5, clamped: 4, cap: 0.5 });
  t.is(hook(capped, 'L1.all').counters.clamped, 4);
  const none = await run(0);
  t.like(none.interventions, { executed: 0, rate: 0, clamped: 8 });
  // hint text is counted per model decision
  const hinted = await runEpisode(env, { model: scriptedModel(['look', 'look']), maxSteps: 2, harness: patched({ rules: [{ name: 'h', hook: 'preDecision', when: { path: 'step', gte: 0 }, effect: { type: 'hint', message: 'try the drawer 1' } }] }) });
  t.like(hinted.interventions, { executed: 0, hintTokens: 8, hintTokensPerDecision: 4 });
  // a bad cap is a typed option error
  await t.throwsAsync(() => runEpisode(env, { model: scriptedModel(['look']), maxInterventionRate: 2 }), { message: /maxInterventionRate must be a number from 0 to 1/ });
});
