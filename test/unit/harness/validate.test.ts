import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { checkPatchFile, showPatchFile, validatePatch, type HarnessError } from '../../../harness/index.ts';

const dir = mkdtempSync(join(tmpdir(), 'hr1-patch-'));
const file = (name: string, text: string): string => {
  const p = join(dir, name);
  writeFileSync(p, text);
  return p;
};
const good = { skills: ['Be brief.'], rules: [{ hook: 'preDecision', when: { pred: 'nothingHappens' }, effect: { type: 'hint', message: 'Try something else.' } }], code: [{ hook: 'postFeedback', source: 'function hook(ctx, nb) { nb.n = (nb.n || 0) + 1; return null; }' }] };

test('check - a good patch passes schema, compile and the smoke episode', async (t) => {
  const r = await checkPatchFile(file('good.json', JSON.stringify(good, null, 2)));
  t.true(r.ok, r.report);
  t.deepEqual(r.errors, []);
  t.regex(r.report, /: OK\n/);
  t.regex(r.report, /smoke: valid_seen\/.*patched won in \d+ steps \(base won in \d+ steps\)/);
  t.regex(r.report, /hash: [0-9a-f]{64}/);
});

test('check - reports the sandbox error with the field path and hook', async (t) => {
  const r = await checkPatchFile(file('syntax.json', JSON.stringify({ code: [{ hook: 'preAction', source: 'function hook(ctx, nb) {\n  return {type: };\n}' }] })));
  t.false(r.ok);
  t.is(r.errors[0]?.code, 'PATCH_COMPILE');
  t.is(r.errors[0]?.path, 'code[0].source');
  t.is(r.errors[0]?.hook, 'preAction');
  t.regex(r.report, /code\[0\]\.source \[preAction\]: SyntaxError: .*\(at hook\.js:2:\d+\)/);
});

test('check - runtime faults in the smoke episode make the patch invalid', async (t) => {
  const r = await checkPatchFile(file('throws.json', JSON.stringify({ code: [{ hook: 'postFeedback', source: "function hook(ctx, nb) { 'use strict'; ctx.step = 1; }" }] })));
  t.false(r.ok);
  t.is(r.errors[0]?.code, 'PATCH_SMOKE');
  t.regex(r.report, /code\[0\] \[postFeedback\]: in the smoke episode it threw \d+×: .*read-only/);
});

test('check - bad JSON and a missing file get a verdict, not a crash', async (t) => {
  const r = await checkPatchFile(file('bad.json', '{"rules": [\n  {"hook": 1,}\n]}'));
  t.false(r.ok);
  t.is(r.errors[0]?.code, 'PATCH_JSON');
  t.regex(r.report, /not JSON at line 2, column \d+/);
  const m = await checkPatchFile(join(dir, 'nope.json'));
  t.is(m.errors[0]?.code, 'PATCH_NOT_FOUND');
});

test('show - canonical JSON and hash; the same content in another layout has the same hash', (t) => {
  const a = showPatchFile(file('a.json', JSON.stringify(good, null, 2)));
  const b = showPatchFile(file('b.json', JSON.stringify({ code: good.code, rules: good.rules, skills: good.skills })));
  t.is(a.hash, b.hash);
  t.is(a.canonical, b.canonical);
  t.regex(a.hash, /^[0-9a-f]{64}$/);
  t.true(a.canonical.startsWith('{"code":'));
  const e = t.throws(() => showPatchFile(file('inv.json', '{"rules": 3}'))) as HarnessError;
  t.is(e.code, 'HARNESS_BAD_PATCH');
  t.regex(e.message, /rules: /);
});

test('validate - schema problems skip compile and smoke', async (t) => {
  const r = await validatePatch({ code: 'x' });
  t.false(r.ok);
  t.is(r.smoke, null);
  t.is(r.hash, null);
  t.is(r.errors[0]?.path, 'code');
});
