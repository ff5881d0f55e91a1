import test from 'ava';
import { createHash } from 'node:crypto';
import { canonicalJson, composeHarness, baseHarness, harnessVersion, isParsedPatch, parsedPatch, patchFromCanonical, patchHash, toPatch, isHarnessError } from '../../../harness/index.ts';
import { harnessFor, wirePatch } from '../../../actors/target.ts';
import { BASELINES } from '../../../policies/targets/baselines.ts';

const RAW = {
  rules: [{ when: { pred: 'repeatedAction' }, hook: 'postFeedback', effect: { message: 'Try a different action.', type: 'inject_hint' } }],
  skills: ['Check every receptacle before giving up.'],
  code: [],
  description: '',
};

test('parsedPatch - the same patch, canonical text and hash as toPatch / canonicalJson / patchHash', (t) => {
  for (const raw of [RAW, { v: 1 }, {}, ...Object.values(BASELINES).filter((b) => b !== null)]) {
    const p = parsedPatch(raw);
    t.deepEqual(p.patch, toPatch(raw));
    t.is(p.canonical, canonicalJson(toPatch(raw)));
    t.is(p.hash, patchHash(toPatch(raw)));
    t.is(JSON.stringify(p.patch), JSON.stringify(toPatch(raw)), 'same key order');
    t.is(harnessVersion(composeHarness(baseHarness(), p)), harnessVersion(composeHarness(baseHarness(), raw)));
  }
});

test('parsedPatch - a ParsedPatch is not parsed again; a bad patch throws HARNESS_BAD_PATCH with field paths', (t) => {
  const p = parsedPatch(RAW);
  t.true(isParsedPatch(p));
  t.is(parsedPatch(p), p);
  t.false(isParsedPatch({ ...p }), 'a copy is not trusted');
  t.deepEqual(parsedPatch({ ...p }.patch), p);
  const e = t.throws(() => parsedPatch({ rules: [{ hook: 'nope' }] }));
  t.true(isHarnessError(e) && e.code === 'HARNESS_BAD_PATCH');
  t.regex(e!.message, /rules\[0\]\.hook/);
  t.is(e!.message, t.throws(() => toPatch({ rules: [{ hook: 'nope' }] }))!.message);
});

test('patchFromCanonical - checks the hash and the canonical form, then parses once', (t) => {
  const p = parsedPatch(RAW);
  const q = patchFromCanonical(p.canonical, p.hash);
  t.deepEqual(q, p);
  t.true(isParsedPatch(q));
  const wrongHash = t.throws(() => patchFromCanonical(p.canonical, parsedPatch({}).hash));
  t.regex(wrongHash!.message, /not the hash of its canonical text/);
  const spaced = JSON.stringify(JSON.parse(p.canonical), null, 1);
  const h = (s: string) => createHash('sha256').update(s).digest('hex');
  t.regex(t.throws(() => patchFromCanonical(spaced, h(spaced)))!.message, /not in canonical form/);
  t.regex(t.throws(() => patchFromCanonical('{"rules":[{"hook":1}]}', h('{"rules":[{"hook":1}]}')))!.message, /not a valid patch/);
  t.regex(t.throws(() => patchFromCanonical('{', h('{')))!.message, /not JSON/);
});

test('harnessFor - the TargetActor checks and parses a patch once per hash', (t) => {
  const cache = new Map();
  const p = parsedPatch(RAW);
  const a = harnessFor(cache, wirePatch(p));
  t.is(harnessFor(cache, wirePatch(p)), a, 'cached by hash');
  t.is(harnessVersion(a), harnessVersion(composeHarness(baseHarness(), RAW)));
  const base = harnessFor(cache, null);
  t.is(harnessFor(cache, null), base);
  t.is(harnessVersion(base), harnessVersion(baseHarness()));
  // the same hash with other text is checked again (and fails)
  t.throws(() => harnessFor(cache, { canonical: parsedPatch({}).canonical, hash: p.hash }), { message: /not the hash/ });
  // bounded
  const small = new Map();
  for (const skill of ['a', 'b', 'c']) harnessFor(small, wirePatch(parsedPatch({ skills: [skill] })), 2);
  t.is(small.size, 2);
});
