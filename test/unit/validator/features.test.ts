import test from 'ava';
import { Rng } from '../../../cluster/rng.ts';
import { extractPacket, teacherPropose, composeSource } from '../../../policies/engineer/index.ts';
import { parsePatch } from '../../../harness/index.ts';
import { FEATURE_DIM, FEATURE_NAMES, PACKET_FEATURE_NAMES, PATCH_FEATURE_NAMES, candidateFeatures, packetFeatures, patchFeatures } from '../../../policies/scorer/index.ts';
import { randomWalkPatch, candidatePool } from '../../../drivers/index.ts';
import { record, steps } from '../engineer/helpers.ts';

function packet() {
  return extractPacket([
    record('a', 'pick_and_place_simple', { steps: steps([['go to desk 1', 'Nothing happens.'], ['go to desk 1', 'Nothing happens.'], ['go to desk 1', 'Nothing happens.']]) }),
    record('b', 'pick_and_place_simple', { reward: 1, steps: steps([['look', 'You are in a room.']]) }),
  ]);
}

test('features - the vector has one number per named feature, all finite', (t) => {
  const p = packet();
  const [prop] = teacherPropose(p, { k: 1, seed: 0 });
  const f = candidateFeatures(p, prop!.patch);
  t.is(f.length, FEATURE_DIM);
  t.is(FEATURE_NAMES.length, FEATURE_DIM);
  t.true(f.every((x) => Number.isFinite(x)));
  t.is(packetFeatures(p).length, PACKET_FEATURE_NAMES.length);
});

test('features - env one-hot and batch rates come from the packet', (t) => {
  const f = packetFeatures(packet());
  t.is(f[FEATURE_NAMES.indexOf('env:alfworld')], 1);
  t.is(f[FEATURE_NAMES.indexOf('env:dbbench')], 0);
  t.is(f[FEATURE_NAMES.indexOf('batch:won_rate')], 0.5);
});

test('features - the patch part counts the grammar\'s structural groups it uses', (t) => {
  const patch = { rules: [{ hook: 'preAction', when: { pred: 'proposedInadmissible' }, effect: { type: 'block_and_prompt', message: 'Try a different action.' } }], code: [{ hook: 'preAction', source: composeSource('preAction', [{ id: 'closest_admissible', params: [2] }]) }] };
  const f = patchFeatures(patch);
  const at = (n: string) => f[PATCH_FEATURE_NAMES.indexOf(n)]!;
  const groups = PATCH_FEATURE_NAMES.filter((n) => n.startsWith('grp:'));
  t.deepEqual(groups.filter((n) => at(n) > 0).sort(), ['grp:blk:closest_admissible', 'grp:cond:pred', 'grp:eff:block_and_prompt'].sort());
  t.is(at('patch:in_grammar'), 1);
  t.is(at('rule:preAction'), 1 / 4);
  t.is(at('code:preAction'), 1 / 4);
  // a patch outside the grammar's space (a hand-written code hook): no group, in_grammar 0
  const off = patchFeatures({ code: [{ hook: 'preDecision', source: 'function hook(ctx, nb) { return null; }' }] });
  t.is(groups.reduce((s, n) => s + off[PATCH_FEATURE_NAMES.indexOf(n)]!, 0), 0);
  t.is(off[PATCH_FEATURE_NAMES.indexOf('patch:in_grammar')], 0);
});

test('randomWalkPatch - seeded, valid under the patch schema, and varied', (t) => {
  const a = Array.from({ length: 20 }, (_, i) => randomWalkPatch(new Rng(i)));
  const b = Array.from({ length: 20 }, (_, i) => randomWalkPatch(new Rng(i)));
  t.deepEqual(a, b);
  for (const p of a) t.true(parsePatch(p).ok);
  t.true(new Set(a.map((p) => JSON.stringify(p))).size > 15);
});

test('candidatePool - teacher proposals first, then distinct walks, same pool for the same seed', (t) => {
  const p = packet();
  const a = candidatePool(p, { teacherK: 3, walks: 5, seed: 1 });
  t.deepEqual(a, candidatePool(p, { teacherK: 3, walks: 5, seed: 1 }));
  t.notDeepEqual(a, candidatePool(p, { teacherK: 3, walks: 5, seed: 2 }));
  t.true(a.slice(0, 3).every((c) => c.source === 'teacher'));
  t.is(a.filter((c) => c.source === 'walk').length, 5);
  t.is(new Set(a.map((c) => JSON.stringify(c.patch))).size, a.length);
});
