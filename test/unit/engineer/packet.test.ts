import test from 'ava';
import { Rng } from '../../../cluster/rng.ts';
import { EngineerError, alfGoalObject, alfSighting, VOCAB, VOCAB_SIZE, decodeTokens, encodeText, excerptLineText, extractPacket, formatPacket, packetHash, packetTokens, parsePacket, selectFailed } from '../../../policies/engineer/index.ts';
import { record, steps } from './helpers.ts';

function batch() {
  const loop = steps(Array.from({ length: 30 }, () => ['go to diningtable 1', 'On the diningtable 1, you see a box 1.'] as [string, string]));
  const noop = steps([
    ['go to drawer 1', 'The drawer 1 is closed.'],
    ['take mug 1 from drawer 1', 'Nothing happens.'],
    ['take mug 1 from drawer 1', 'Nothing happens.'],
    ['open drawer 1', 'You open the drawer 1. In it, you see a mug 1.'],
  ]);
  return [
    record('valid_seen/pick_and_place_simple-Mug-None-Cabinet-1/trial_T20190909_044715_250790', 'pick_and_place_simple', { steps: loop, status: 'step_limit', end: 'step_limit' }),
    record('valid_seen/pick_and_place_simple-Mug-None-Cabinet-2/trial_T20190909_044715_250791', 'pick_and_place_simple', { steps: noop }),
    record('valid_seen/pick_and_place_simple-Mug-None-Cabinet-3/trial_T20190909_044715_250792', 'pick_and_place_simple', { reward: 1 }),
    record('valid_seen/look_at_obj_in_light-Box-None-DeskLamp-4/trial_T20190909_044715_250793', 'look_at_obj_in_light', { steps: noop, seed: 2 }),
    record('valid_seen/look_at_obj_in_light-Box-None-DeskLamp-4/trial_T20190909_044715_250793', 'look_at_obj_in_light', { steps: loop, seed: 1 }),
    record('valid_seen/pick_heat_then_place_in_recep-Egg-None-Fridge-5/trial_T20190909_044715_250794', 'pick_heat_then_place_in_recep', { reward: 0.5 }),
    record('valid_seen/pick_heat_then_place_in_recep-Egg-None-Fridge-6/trial_T20190909_044715_250795', 'pick_heat_then_place_in_recep', { status: 'env_error' }),
  ];
}

test('packet - identical records give byte-identical text, tokens and hash', (t) => {
  const a = extractPacket(batch());
  const b = extractPacket(structuredClone(batch()));
  t.is(formatPacket(a), formatPacket(b));
  t.is(packetHash(a), packetHash(b));
  t.deepEqual(packetTokens(a), packetTokens(b));
  t.regex(packetHash(a), /^[0-9a-f]{64}$/);
});

test('packet - the same episodes in another order give the same bytes', (t) => {
  const recs = batch();
  const text = formatPacket(extractPacket(recs));
  for (let s = 0; s < 5; s++) {
    const shuffled = new Rng(s).shuffle(recs);
    t.is(formatPacket(extractPacket(shuffled)), text);
    t.deepEqual(packetTokens(extractPacket(shuffled)), packetTokens(extractPacket(recs)));
  }
});

test('packet - selection: failed only, env errors left out, round robin over types, lowest reward first, ties by task id then seed', (t) => {
  const p = extractPacket(batch());
  t.deepEqual(p.batch, { episodes: 7, won: 1, failed: 5, errors: 1 });
  // types in name order: look_at…, pick_and_place…, pick_heat…; round 1 one of each, round 2 the rest
  t.deepEqual(
    p.episodes.map((e) => e.taskType),
    ['look_at_obj_in_light', 'pick_and_place_simple', 'pick_heat_then_place_in_recep', 'look_at_obj_in_light', 'pick_and_place_simple'],
  );
  // look_at: same task id, seed 1 (the loop) before seed 2
  t.is(p.episodes[0]!.signals.longestRun, 30);
  // pick_and_place: task …-1 before …-2 (both reward 0)
  t.is(p.episodes[1]!.status, 'step_limit');
  t.is(p.episodes[2]!.reward, 0.5);
  t.deepEqual(p.failedByType, { look_at_obj_in_light: 2, pick_and_place_simple: 2, pick_heat_then_place_in_recep: 1 });
  // at most max: with 2, one per type in type order
  const two = selectFailed(batch(), 2);
  t.deepEqual(two.map((r) => r.taskType), ['look_at_obj_in_light', 'pick_and_place_simple']);
  // lowest reward first within a type
  const recs = [record('b', 'x', { reward: 0.5 }), record('a', 'x', { reward: 0.2 }), record('c', 'x', { reward: 0 })];
  t.deepEqual(selectFailed(recs).map((r) => r.taskId), ['c', 'a', 'b']);
  // at most 20
  const many = Array.from({ length: 30 }, (_, i) => record(`t${String(i).padStart(2, '0')}`, 'x'));
  t.is(extractPacket(many).episodes.length, 20);
});

test('packet - signals: repeated actions with counts, no-op observations, invalid formats, SQL errors, invalid clicks', (t) => {
  const p = extractPacket(batch());
  const noop = p.episodes[3]!;
  t.deepEqual(noop.signals.repeatedActions, [{ action: 'take mug 1 from drawer 1', count: 2 }]);
  t.is(noop.signals.noOps, 2);
  t.is(noop.signals.longestRun, 2);
  const sql = extractPacket([
    record('v0.2/dev/3', 'ranking', { env: 'dbbench', end: 'agent_validation_failed', steps: steps([['SELECT * FROM `t`', "1146 (42S02): Table 't' doesn't exist"], ['blah', ''], ['bad', '']], { sql: [1], invalid: [2, 3] }) }),
  ]);
  t.is(sql.episodes[0]!.signals.sqlErrors, 1);
  t.is(sql.episodes[0]!.signals.invalidFormats, 2);
  t.is(sql.episodes[0]!.status, 'invalid_format');
  const shop = steps([['click[b0972q1t8t]', 'Nothing happens.'], ['search[mug]', 'results']]);
  const ws = extractPacket([record('fixed_12', 'shop', { env: 'webshop', steps: shop })]);
  t.is(ws.episodes[0]!.signals.invalidClicks, 1);
  t.is(ws.episodes[0]!.signals.noOps, 0);
  const text = formatPacket(p);
  t.regex(text, /repeated actions "go to diningtable 1" ×30 \(longest run 30\)/);
  t.regex(text, /no-op observations 2/);
});

test('packet - instance and product ids are sanitised; object numbers stay', (t) => {
  const id = 'valid_seen/pick_and_place_simple-Mug-None-Cabinet-9/trial_T20190909_044715_250799';
  const shop = steps([
    ['click[B0972Q1T8T]', 'Item B0972Q1T8T, see also B07ABCDEF1 and b0972q1t8t'],
    ['click[b07abcdef1]', `session ${'a'.repeat(32)} 123e4567-e89b-12d3-a456-426614174000`],
  ]);
  const p = extractPacket([record(id, 'shop', { env: 'webshop', steps: shop, goal: `task ${id} trial_T20190101_000000_1` })]);
  const text = formatPacket(p);
  t.false(text.includes(id));
  t.false(/trial_T\d/.test(text));
  t.false(/b0972q1t8t|b07abcdef1/i.test(text));
  t.false(text.includes('a'.repeat(32)));
  t.false(text.includes('123e4567'));
  // the same product keeps one placeholder within an episode
  t.regex(text, /click\[<product-1>\] => Item <product-1>, see also <product-2> and <product-1>/);
  t.regex(text, /click\[<product-2>\]/);
  const alf = formatPacket(extractPacket(batch()));
  t.regex(alf, /go to diningtable 1/);
  t.false(alf.includes('trial_T2019'));
});

test('packet - excerpts are trimmed to the budget: first line, the tail, and a count of what was left out', (t) => {
  const long = steps(Array.from({ length: 40 }, (_, i) => [`go to cabinet ${i + 1}`, `On the cabinet ${i + 1}, you see a plate ${i}, a cup ${i}, and a spoon ${i}.`] as [string, string]));
  for (const budget of [300, 600, 1200]) {
    const p = extractPacket([record('t', 'x', { steps: long })], { excerptChars: budget });
    const e = p.episodes[0]!;
    const used = e.excerpt.reduce((n, l) => n + excerptLineText(l).length + 1, 0);
    t.true(used <= budget, `budget ${budget}: used ${used}`);
    t.is(e.excerpt[0]!.from, 1, 'the first step is kept');
    t.is(e.excerpt[e.excerpt.length - 1]!.to, 40, 'the last step is kept');
    t.is(e.omitted, 40 - e.excerpt.length);
    t.true(e.omitted > 0);
    t.regex(formatPacket(p), new RegExp(`… ${e.omitted} steps left out …`));
  }
  // runs of identical steps collapse into one line
  const p = extractPacket(batch());
  t.is(p.episodes[0]!.excerpt.length, 1);
  t.is(excerptLineText(p.episodes[0]!.excerpt[0]!), '  [1-30 ×30] > go to diningtable 1 => On the diningtable 1, you see a box 1.');
  // a small budget gives a smaller packet
  t.true(formatPacket(extractPacket([record('t', 'x', { steps: long })], { excerptChars: 300 })).length < formatPacket(extractPacket([record('t', 'x', { steps: long })])).length);
});

test('packet - a malformed record or packet names the field', (t) => {
  const bad = batch() as unknown as Record<string, unknown>[];
  (bad[2]!.outcome as Record<string, unknown>).reward = 'high';
  const e = t.throws(() => extractPacket(bad as never), { instanceOf: EngineerError });
  t.is(e!.field, 'records[2].outcome.reward');
  t.regex(e!.message, /^records\[2\]\.outcome\.reward: /);
  const e2 = t.throws(() => extractPacket([{ ...batch()[0]!, steps: [{ step: 1 }] }] as never), { instanceOf: EngineerError });
  t.regex(e2!.field!, /^records\[0\]\.steps\[0\]\./);
  t.throws(() => extractPacket('nope' as never), { instanceOf: EngineerError, message: /records must be an array/ });
  // a packet survives JSON; a broken one names the field
  const p = extractPacket(batch());
  t.is(formatPacket(parsePacket(JSON.parse(JSON.stringify(p)))), formatPacket(p));
  const broken = JSON.parse(JSON.stringify(p));
  broken.episodes[1].status = 'exploded';
  const e3 = t.throws(() => parsePacket(broken), { instanceOf: EngineerError });
  t.is(e3!.field, 'packet.episodes[1].status');
});

test('tokens - a fixed vocabulary of unique tokens; text round-trips up to case and spacing', (t) => {
  t.is(new Set(VOCAB).size, VOCAB_SIZE);
  t.true(VOCAB_SIZE < 1200);
  const ids = encodeText('Go to Cabinet 12. Nothing happens.');
  t.is(decodeTokens(ids), 'go to cabinet 12 . nothing happens .');
  // out-of-vocabulary words and big numbers are spelled
  t.is(decodeTokens(encodeText('zorblax 12345')), 'zorblax 12345');
  t.is(encodeText('zorblax').length, 8);
  const p = extractPacket(batch());
  const toks = packetTokens(p);
  t.true(toks.every((i) => Number.isInteger(i) && i >= 0 && i < VOCAB_SIZE));
  t.is(VOCAB[toks[0]!], '<bos>');
  t.is(VOCAB[toks[toks.length - 1]!], '<eos>');
  t.is(toks.filter((i) => VOCAB[i] === '<ep>').length, p.episodes.length);
  // a token budget cuts every episode to its share and keeps them all
  const small = packetTokens(p, 100);
  t.true(small.length <= 100);
  t.is(small.filter((i) => VOCAB[i] === '<ep>').length, p.episodes.length);
  t.true(small.some((i) => VOCAB[i] === '<cut>'));
});

test('packet - an ALFWorld excerpt keeps where the goal\'s object was first seen, with a count per gap', (t) => {
  const walk = Array.from({ length: 40 }, (_, i): [string, string] => [`go to cabinet ${i + 1}`, `On the cabinet ${i + 1}, you see a plate ${i}, a cup ${i}, and a spoon ${i}.`]);
  walk[11] = ['go to drawer 3', 'On the drawer 3, you see a mug 2, and a pen 1.'];
  walk[12] = ['go to shelf 1', 'On the shelf 1, you see a mug 4.'];
  const p = extractPacket([record('t', 'pick_and_place_simple', { steps: steps(walk), goal: 'put a mug in cabinet.' })], { excerptChars: 600 });
  const e = p.episodes[0]!;
  t.deepEqual(e.excerpt.slice(0, 2).map((l) => [l.from, l.action]), [[1, 'go to cabinet 1'], [12, 'go to drawer 3']], 'the first line, then the first sighting');
  t.is(e.excerpt[e.excerpt.length - 1]!.to, 40);
  t.true(e.excerpt[2]!.from > 13, 'a gap before the tail');
  t.is(e.omitted, 40 - e.excerpt.length);
  const text = formatPacket(p);
  const gaps = [...text.matchAll(/… (\d+) steps? left out …/g)].map((m) => Number(m[1]));
  t.deepEqual(gaps, [10, e.excerpt[2]!.from - 13]);
  t.is(gaps.reduce((a, b) => a + b, 0), e.omitted);
  t.deepEqual(alfSighting(e), { goal: 'put a mug in cabinet', word: 'mug', object: 'mug 2', place: 'drawer 3' });
  // another env, or a goal whose object no observation showed, keeps first line and tail only
  const none = extractPacket([record('t', 'pick_and_place_simple', { steps: steps(walk), goal: 'put a kettle in cabinet.' })], { excerptChars: 600 }).episodes[0]!;
  t.is(none.excerpt[1]!.from > 13, true);
  t.is(alfSighting(none), null);
  t.is(alfSighting({ ...e, env: 'webshop' }), null);
});

test('packet - the object kind of each ALFWorld goal form', (t) => {
  const goals: [string, string | null][] = [
    ['put a clean butterknife in drawer.', 'butterknife'],
    ['Your task is to: put some spraybottle on toilet.', 'spraybottle'],
    ['heat some egg and put it in garbagecan.', 'egg'],
    ['cool some lettuce and put it in countertop.', 'lettuce'],
    ['clean some soapbar and put it in cabinet.', 'soapbar'],
    ['look at cd under the desklamp.', 'cd'],
    ['examine the alarmclock with the desklamp.', 'alarmclock'],
    ['find two pillow and put them in sofa.', 'pillow'],
    ['put two cellphone in bed.', 'cellphone'],
    ['What is the average price?', null],
  ];
  for (const [g, w] of goals) t.is(alfGoalObject(g), w, g);
});
