import test from 'ava';
import { HarnessError, MAX_ENTRIES, baseHarness, canonicalJson, composeHarness, harnessVersion, isHarnessError, parsePatch, patchHash, removePatch, toPatch } from '../../../harness/index.ts';

const good = {
  skills: ['Open receptacles before searching them.'],
  rules: [
    { name: 'stuck', hook: 'preDecision', when: { all: [{ pred: 'nothingHappens' }, { path: 'step', gte: 3 }, { not: { path: 'last.action', contains: 'look' } }] }, effect: { type: 'hint', message: '{{last.action}} did nothing.' } },
    { hook: 'postFeedback', when: { any: [{ path: 'observation', matches: 'nothing', flags: 'i' }, { path: 'history.-1.action', equals: 'look' }] }, effect: { type: 'inject_hint', message: 'x' } },
  ],
  code: [{ hook: 'preAction', source: 'function hook(ctx, nb) { return null; }' }],
};

test('schema - accepts a patch with skills, rules and code', (t) => {
  t.true(parsePatch(good).ok);
});

test('schema - names the field path and hook of every problem', (t) => {
  const r = parsePatch({
    rules: [
      { hook: 'preAction', when: { all: [{ path: 'nope.x', equals: 1 }, { pred: 'bogus' }, { path: 'step', gt: 'x' }] }, effect: { type: 'hint', message: 'm' } },
      { hook: 'preDecision', when: { path: 'observation', matches: '(' }, effect: { type: 'hint', message: '' } },
    ],
    code: [{ hook: 'onStep', source: 'x' }],
  });
  t.false(r.ok);
  if (r.ok) return;
  const by = new Map(r.issues.map((i) => [i.path, i]));
  t.regex(by.get('rules[0].when.all[0].path')?.message ?? '', /unknown ctx root 'nope'/);
  t.regex(by.get('rules[0].when.all[1].pred')?.message ?? '', /unknown predicate/);
  t.regex(by.get('rules[0].when.all[2].gt')?.message ?? '', /finite number/);
  t.regex(by.get('rules[0].effect.type')?.message ?? '', /preAction may return block_and_prompt/);
  t.is(by.get('rules[0].effect.type')?.hook, 'preAction');
  t.regex(by.get('rules[1].when.matches')?.message ?? '', /invalid regular expression/);
  t.regex(by.get('rules[1].effect.message')?.message ?? '', /non-empty/);
  t.regex(by.get('code[0].hook')?.message ?? '', /hook is one of init, preDecision, preAction, postFeedback/);
  t.regex(by.get('code[0].source')?.message ?? '', /function hook\(ctx, nb\)/);
});

test('schema - at most 12 rules and code hooks together', (t) => {
  const rules = Array.from({ length: MAX_ENTRIES - 1 }, () => ({ hook: 'preDecision', effect: { type: 'hint', message: 'h' } }));
  const code = [{ hook: 'init', source: 'function hook(ctx, nb) {}' }];
  t.true(parsePatch({ rules, code }).ok);
  const r = parsePatch({ rules: [...rules, rules[0]], code });
  t.false(r.ok);
  if (!r.ok) t.regex(r.issues[0]?.message ?? '', /at most 12 rules and code hooks together \(found 13\)/);
});

test('canonical - key order and formatting do not change the hash; content does', (t) => {
  const reordered = JSON.parse(JSON.stringify({ code: good.code, rules: good.rules.map((r) => ({ effect: r.effect, when: r.when, hook: r.hook, ...(r.name ? { name: r.name } : {}) })), skills: good.skills })) as unknown;
  t.is(patchHash(toPatch(good)), patchHash(toPatch(reordered)));
  t.is(patchHash(toPatch({ ...good, rules: [] })), patchHash(toPatch({ skills: good.skills, code: good.code })));
  t.not(patchHash(toPatch(good)), patchHash(toPatch({ ...good, skills: ['Other.'] })));
  t.regex(patchHash(toPatch(good)), /^[0-9a-f]{64}$/);
  t.is(canonicalJson({ b: 1, a: [{ d: 2, c: undefined }] }), '{"a":[{"d":2}],"b":1}');
});

test('compose - base ∘ P adds a layer; removing P gives the base back', (t) => {
  const base = baseHarness({ skills: ['Base skill.'] });
  const p = toPatch(good);
  const h = composeHarness(base, good);
  t.is(h.layers.length, 2);
  t.not(harnessVersion(h), harnessVersion(base));
  const back = removePatch(h, patchHash(p));
  t.deepEqual(back, base);
  t.is(harnessVersion(back), harnessVersion(base));
  const e = t.throws(() => removePatch(base, patchHash(p)));
  t.true(isHarnessError(e));
  t.is((e as HarnessError).code, 'HARNESS_UNKNOWN_LAYER');
});

test('toPatch - throws HARNESS_BAD_PATCH listing each field', (t) => {
  const e = t.throws(() => toPatch({ rules: [{ hook: 'init', effect: { type: 'hint', message: 'x' } }] })) as HarnessError;
  t.is(e.code, 'HARNESS_BAD_PATCH');
  t.regex(e.message, /rules\[0\]\.effect\.type: init may return skill, tool_hint, note, not hint/);
});
