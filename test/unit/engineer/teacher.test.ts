import test from 'ava';
import { canonicalJson, toPatch, parsePatch } from '../../../harness/index.ts';
import { parseComposed, diagnose, engineerPrompt, packetNames, patchToTokens, teacherForFinding, tokensToPatch, extractPacket, formatPacket, openAIEngineerFromSpec, parseEngineerReply, teacherPropose, EngineerError } from '../../../policies/engineer/index.ts';
import { scriptedBackend, startServer } from '../../../policies/targets/serve.ts';
import { record, steps } from './helpers.ts';

function packet(env = 'alfworld') {
  const loop = steps(Array.from({ length: 20 }, () => ['go to diningtable 1', 'On the diningtable 1, you see a box 1.'] as [string, string]));
  const noop = steps([
    ['go to drawer 1', 'The drawer 1 is closed.'],
    ['take mug 1 from drawer 1', 'Nothing happens.'],
    ['I will think about it', 'Nothing happens.'],
  ], { invalid: [3] });
  return extractPacket([
    record('a', 'pick_and_place_simple', { env, steps: loop, status: 'step_limit', end: 'step_limit' }),
    record('b', 'look_at_obj_in_light', { env, steps: noop }),
    record('c', 'look_at_obj_in_light', { env, reward: 1 }),
  ]);
}

test('teacher - reads the signals: loops, no-ops, invalid formats, step limit', (t) => {
  const kinds = diagnose(packet()).map((f) => f.kind);
  for (const k of ['loop', 'noop', 'invalid_format', 'step_limit'] as const) t.true(kinds.includes(k), k);
  t.false(kinds.includes('sql_error'));
  const sql = extractPacket([record('v0.2/dev/1', 'ranking', { env: 'dbbench', steps: steps([['Action: Operation', "1146 (42S02): Table 'x' doesn't exist"], ['Action: Operation', 'ok']], { sql: [1] }) })]);
  t.true(diagnose(sql).some((f) => f.kind === 'sql_error'));
});

test('teacher - an ALFWorld step limit is answered with acting blocks, finish_goal among them, all in the grammar', (t) => {
  const p = packet();
  const whole = teacherForFinding(p, 'step_limit');
  t.truthy(whole, 'the packet has a step limit');
  const blocks = (whole!.patch.code ?? []).flatMap((c) => (parseComposed(c.hook, c.source) ?? []).map((u) => u.id));
  t.true(blocks.includes('finish_goal'), blocks.join(','));
  t.true(blocks.includes('take_goal_object'), blocks.join(','));
  // over many seeds, some K proposals carry it, each one a sentence of the grammar
  const props = Array.from({ length: 12 }, (_, s) => teacherPropose(p, { k: 4, seed: s })).flat();
  const withFinish = props.filter((x) => (x.patch.code ?? []).some((c) => (parseComposed(c.hook, c.source) ?? []).some((u) => u.id === 'finish_goal')));
  t.true(withFinish.length > 0, `${withFinish.length} of ${props.length}`);
  for (const x of withFinish) t.not(patchToTokens(x.patch, packetNames(p)), null);
  // not for other envs: the block reads ALFWorld's actions
  t.false(JSON.stringify(teacherForFinding(packet('webshop'), 'step_limit')?.patch ?? {}).includes('finish_goal'));
});

test('teacher - K distinct proposals, each a valid patch; deterministic given (packet, seed); seeds differ', (t) => {
  const p = packet();
  const a = teacherPropose(p, { k: 6, seed: 1 });
  t.is(a.length, 6);
  t.is(new Set(a.map((x) => x.hash)).size, 6);
  for (const x of a) {
    t.notThrows(() => toPatch(x.patch));
    t.true(parsePatch(x.patch).ok);
    t.true(x.rationale.length > 0);
  }
  t.is(canonicalJson(teacherPropose(p, { k: 6, seed: 1 })), canonicalJson(a));
  const b = teacherPropose(p, { k: 6, seed: 2 });
  t.notDeepEqual(b.map((x) => x.hash), a.map((x) => x.hash));
  // over a few seeds the teacher uses every mechanism
  const all = Array.from({ length: 16 }, (_, i) => i + 1).flatMap((seed) => teacherPropose(p, { k: 6, seed }));
  t.true(all.some((x) => (x.patch.skills?.length ?? 0) > 0));
  t.true(all.some((x) => x.patch.rules?.some((r) => r.hook === 'preAction' && r.effect.type === 'block_and_prompt' && JSON.stringify(r.when).includes('proposedRepeatsLast'))));
  t.true(all.some((x) => x.patch.rules?.some((r) => r.hook === 'postFeedback' && r.effect.type === 'inject_hint')));
  t.true(all.some((x) => x.patch.rules?.some((r) => r.hook === 'preDecision' && JSON.stringify(r.when).includes('stepLimitNear'))));
  t.true(all.some((x) => (x.patch.code?.length ?? 0) > 0));
  // read off the excerpts: the object the model named that no observation showed is named back
  t.true(diagnose(p).some((f) => f.kind === 'hallucinated' && f.names?.includes('mug 1')));
  t.true(all.some((x) => JSON.stringify(x.patch).includes('There is no mug 1')));
  // code hooks are composed from the tested blocks; some rewrite actions
  t.true(all.every((x) => (x.patch.code ?? []).every((c) => parseComposed(c.hook, c.source) !== null)));
  t.true(all.some((x) => (x.patch.code ?? []).some((c) => /closest_admissible|escape_loop/.test(c.source))));
  // a packet without failures gets nothing
  t.deepEqual(teacherPropose(extractPacket([record('c', 'x', { reward: 1 })]), { k: 4 }), []);
});

test('teacher - seen target: where a failed goal\'s object was seen, written out per goal with copied names', (t) => {
  const walk = (obj: string, place: string): ReturnType<typeof steps> =>
    steps([
      ['go to cabinet 1', 'On the cabinet 1, you see a plate 1.'],
      [`go to ${place}`, `On the ${place}, you see a ${obj}, and a pen 1.`],
      ['go to cabinet 2', 'On the cabinet 2, you see nothing.'],
      ['go to cabinet 2', 'On the cabinet 2, you see nothing.'],
      ['go to cabinet 2', 'On the cabinet 2, you see nothing.'],
    ]);
  const p = extractPacket([
    record('a', 'pick_and_place_simple', { steps: walk('mug 2', 'drawer 3'), goal: 'put a mug in cabinet.' }),
    record('b', 'pick_clean_then_place_in_recep', { steps: walk('apple 1', 'fridge 1'), goal: 'clean some apple and put it in countertop.' }),
  ]);
  const f = diagnose(p).find((x) => x.kind === 'seen_target');
  t.deepEqual(f?.seen?.map((x) => [x.goal, x.object, x.place]).sort(), [['clean some apple and put it in countertop', 'apple 1', 'fridge 1'], ['put a mug in cabinet', 'mug 2', 'drawer 3']]);
  // the names section starts with the sightings, a (goal, object, place) triple each
  const names = packetNames(p);
  t.deepEqual(names.slice(0, 6).sort(), [...f!.seen!.flatMap((x) => [x.goal, x.object, x.place])].sort());
  const only = teacherForFinding(p, 'seen_target', { seed: 0 })!;
  t.truthy(only);
  const rules = only.patch.rules ?? [];
  t.is(rules.length, 4);
  for (const x of f!.seen!) {
    // go there first on a rerun of that goal (and only that goal)
    t.true(rules.some((r) => r.hook === 'preAction' && JSON.stringify(r.when).includes(`"contains":"${x.goal}"`) && r.effect.type === 'rewrite_action' && r.effect.action === `go to ${x.place}`));
  }
  // every name is copied: the completion refers to the names section, and decodes back
  const ids = patchToTokens(only.patch, names);
  t.truthy(ids);
  const { description: _d, ...body } = only.patch;
  t.deepEqual(tokensToPatch(ids!, names), toPatch(body));
  t.is(teacherForFinding(p, 'missing_table'), null);
  // the general teacher writes the finding out whole when it addresses it
  const all = [1, 2, 3, 4, 5, 6].flatMap((seed) => teacherPropose(p, { k: 6, seed }));
  const withSeen = all.filter((x) => x.addresses.includes('seen_target'));
  t.true(withSeen.length > 0);
  t.true(withSeen.every((x) => (x.patch.rules ?? []).filter((r) => JSON.stringify(r.when).includes('task.goal')).length >= 4));
  // kinds: a teacher restricted to the sightings answers nothing else; to a kind the packet lacks, nothing at all
  const facts = [1, 2, 3].flatMap((seed) => teacherPropose(p, { k: 6, seed, kinds: ['seen_target'] }));
  t.true(facts.length > 0);
  t.true(facts.every((x) => x.addresses.length > 0 && x.addresses.every((a) => a === 'seen_target')), JSON.stringify(facts.map((x) => x.addresses)));
  t.true(all.some((x) => x.addresses.some((a) => a !== 'seen_target')), 'the unrestricted teacher answers other findings too');
  t.deepEqual(teacherPropose(p, { k: 6, seed: 1, kinds: ['missing_table'] }), []);
});

test('teacher - env-specific skills: the output format for DBBench names its protocol', (t) => {
  const p = extractPacket([record('v0.2/dev/2', 'ranking', { env: 'dbbench', end: 'agent_validation_failed', steps: steps([['the answer is 3', '']], { invalid: [1] }) })]);
  const texts = [1, 2, 3].flatMap((seed) => teacherPropose(p, { k: 4, seed })).flatMap((x) => x.patch.skills ?? []);
  t.true(texts.some((s) => s.includes('Action: Operation')));
});

test('openai engineer - a real local server: a valid JSON patch is a candidate, garbage and schema errors are invalid and reported', async (t) => {
  const good = { skills: ['Do not repeat the same action.'], rules: [{ hook: 'preAction', when: { pred: 'proposedRepeatsLast' }, effect: { type: 'block_and_prompt', message: 'Try something different.' } }] };
  const backend = scriptedBackend([
    `Here is my patch:\n\`\`\`json\n${JSON.stringify(good)}\n\`\`\``,
    'I cannot help with that.',
    JSON.stringify({ rules: [{ hook: 'preAction', effect: { type: 'explode' } }] }),
  ]);
  const server = await startServer({ backend });
  try {
    // one call at a time: the scripted backend answers in arrival order (parallel calls: test/integration/engineer/llm-editor.test.ts)
    const eng = openAIEngineerFromSpec(`openai:${server.url}#editor`, { concurrency: 1, client: { maxRetries: 0 } });
    const p = packet();
    const c = await eng.propose(p, { k: 3, seed: 5 });
    t.is(c.length, 3);
    t.true(c[0]!.ok);
    if (c[0]!.ok) t.deepEqual(c[0]!.patch, toPatch(good));
    t.false(c[1]!.ok);
    if (!c[1]!.ok) t.is(c[1]!.issues[0]!.code, 'PATCH_JSON');
    t.false(c[2]!.ok);
    if (!c[2]!.ok) t.regex(c[2]!.issues.map((i) => i.path).join(' '), /rules\[0\]\.effect/);
    // the prompt carries the packet text and the contract; seeds go on the wire
    const req = backend.requests[0]!;
    t.is(req.model, 'editor');
    t.true(String(req.messages[1]!.content).includes(formatPacket(p)));
    t.regex(String(req.messages[0]!.content), /block_and_prompt/);
    t.deepEqual(backend.requests.map((r) => r.seed), [5, 6, 7]);
    t.deepEqual(engineerPrompt(p), req.messages.map((m) => ({ role: m.role, content: m.content })));
  } finally {
    await server.close();
  }
  t.throws(() => openAIEngineerFromSpec('sim/qwen-3b'), { instanceOf: EngineerError, message: /openai:<base-url>#<model>/ });
  t.false(parseEngineerReply('{"skills": "not a list"}').ok);
});
