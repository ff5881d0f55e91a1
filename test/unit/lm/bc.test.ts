import test from 'ava';
import { bcRows, collectDecisions } from '../../../policies/targets/lm/bc.ts';
import { LmNotBuiltError, isLmTargetError } from '../../../policies/targets/lm/errors.ts';
import { lmModel } from '../../../policies/targets/lm/model.ts';
import { EOS_ID, LmTokenizer } from '../../../policies/targets/lm/tokenizer.ts';
import { harvestWords } from '../../../policies/targets/lm/vocab.ts';
import { resolveConfig, ZOO } from '../../../policies/targets/lm/zoo.ts';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const tok = new LmTokenizer(await harvestWords(['alfworld']));
const rates = { skills: 0.5, hint: 0.5, injected: 0.3 };

test('bc - the same seed gives the same decisions and rows; another seed does not', async (t) => {
  const a = await collectDecisions({ env: 'alfworld', episodes: 8, seed: 3 });
  const b = await collectDecisions({ env: 'alfworld', episodes: 8, seed: 3 });
  const c = await collectDecisions({ env: 'alfworld', episodes: 8, seed: 4 });
  t.deepEqual(a, b);
  t.notDeepEqual(a, c);
  const budget = { maxLen: 256 };
  t.deepEqual(bcRows(a, tok, budget, rates, 1), bcRows(b, tok, budget, rates, 1));
  t.notDeepEqual(bcRows(a, tok, budget, rates, 1), bcRows(a, tok, budget, rates, 2));
});

test('bc - contexts are the harness messages, labelled with the expert action; noise plays other actions', async (t) => {
  const ds = await collectDecisions({ env: 'alfworld', episodes: 10, seed: 7, noise: 0.3 });
  t.true(ds.length > 40);
  for (const d of ds) {
    t.is(d.messages[0]!.role, 'system');
    t.true(d.admissible.includes(d.action) || d.action === 'look', d.action);
  }
  // a noisy step: the next context's last action is not the label of the previous decision
  const detours = ds.filter((d, i) => ds[i + 1]?.taskId === d.taskId && ds[i + 1]!.actions[ds[i + 1]!.actions.length - 1] !== d.action);
  t.true(detours.length > 0);
  const clean = await collectDecisions({ env: 'alfworld', episodes: 10, seed: 7, noise: 0 });
  t.true(clean.every((d, i) => clean[i + 1]?.taskId !== d.taskId || clean[i + 1]!.actions.at(-1) === d.action));
});

test('bc - rows end in EOS, fit the window, and carry hint segments at about the asked rate', async (t) => {
  const ds = await collectDecisions({ env: 'alfworld', episodes: 20, seed: 1 });
  const rows = bcRows(ds, tok, { maxLen: 192 }, rates, 1);
  let hinted = 0;
  let skilled = 0;
  for (const r of rows) {
    t.is(r.completion[r.completion.length - 1], EOS_ID);
    t.true(r.prompt.length + r.completion.length <= 192);
    if (r.prompt.includes(tok.special('<hint>'))) hinted++;
    if (r.prompt.includes(tok.special('<skill>'))) skilled++;
  }
  t.true(hinted / rows.length > 0.4 && hinted / rows.length < 0.85, `hinted ${hinted}/${rows.length}`);
  t.true(skilled / rows.length > 0.35 && skilled / rows.length < 0.65, `skills ${skilled}/${rows.length}`);
  const none = bcRows(ds, tok, { maxLen: 192 }, { skills: 0, hint: 0, injected: 0 }, 1);
  t.true(none.every((r) => !r.prompt.includes(tok.special('<hint>')) && !r.prompt.includes(tok.special('<skill>'))));
});

test('zoo - a fine-tuned variant reads what its base reads unless the entry says otherwise', (t) => {
  const zoo = [
    { name: 'b', envs: ['alfworld' as const], dModel: 64, nLayers: 1, nHeads: 2, dFf: 128, maxLen: 192, episodes: 30, steps: 60, seed: 1, elide: 2, compactRoom: true, rope: true, maxNewTokens: 24 },
    { name: 'b-da', envs: ['alfworld' as const], dModel: 64, nLayers: 1, nHeads: 2, dFf: 128, maxLen: 192, episodes: 30, steps: 60, seed: 11, base: 'b', dagger: 10 },
    { name: 'b-plain', envs: ['alfworld' as const], dModel: 64, nLayers: 1, nHeads: 2, dFf: 128, maxLen: 192, episodes: 30, steps: 60, seed: 11, base: 'b', dagger: 10, elide: 0, compactRoom: false },
  ];
  const da = resolveConfig('b-da', zoo);
  t.is(da.elide, 2);
  t.true(da.compactRoom);
  t.true(da.rope);
  t.is(da.maxNewTokens, 24);
  const plain = resolveConfig('b-plain', zoo);
  t.is(plain.elide, undefined);
  t.is(plain.compactRoom, undefined);
  t.not(plain.hash, da.hash);
  // the built-in DAgger variants of their time keep their as-built configs (without the base's masking)
  t.is(resolveConfig('alf-s-256-ecrt-da').elide, undefined);
  t.is(resolveConfig('alf-s-256-ecrt-xl-da').elide, resolveConfig('alf-s-256-ecrt-xl').elide);
});

test('zoo - at least 20 entries with unique names and hashes; tiny and fine-tuned variants resolve', (t) => {
  t.true(ZOO.length >= 20);
  const rs = ZOO.map((z) => resolveConfig(z.name));
  t.is(new Set(ZOO.map((z) => z.name)).size, ZOO.length);
  t.is(new Set(rs.map((r) => r.hash)).size, ZOO.length);
  t.true(new Set(rs.map((r) => r.dModel)).size >= 3);
  t.true(new Set(rs.map((r) => r.maxLen)).size >= 3);
  t.true(new Set(rs.map((r) => r.episodes)).size >= 3);
  t.true(new Set(rs.map((r) => r.seed)).size >= 3);
  const tiny = resolveConfig('alf-xs-192-a@tiny');
  t.not(tiny.hash, resolveConfig('alf-xs-192-a').hash);
  t.true(tiny.tiny && tiny.steps <= 120);
  const ft = resolveConfig('alf-s-256-a-ft');
  t.is(ft.base?.name, 'alf-s-256-a');
  t.is(ft.dModel, ft.base!.dModel);
  t.is(resolveConfig('alf-s-256-a-ft@tiny').base?.id, 'alf-s-256-a@tiny');
  t.is(resolveConfig('alf-s-256-a').hash, resolveConfig('alf-s-256-a').hash);
});

test('lmModel - a model that is not built is a typed error naming the build command', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'hr1-zoo-'));
  try {
    const e = await t.throwsAsync(lmModel('alf-s-256-a', { dir }), { instanceOf: LmNotBuiltError });
    t.is(e!.code, 'LM_NOT_BUILT');
    t.is(e!.command, 'hr1 zoo build --only alf-s-256-a');
    t.regex(e!.message, /run `hr1 zoo build --only alf-s-256-a`/);
    t.true(isLmTargetError(e));
    const u = await t.throwsAsync(lmModel('no-such-model', { dir }));
    t.is((u as { code?: string }).code, 'LM_UNKNOWN');
    t.regex(u!.message, /alf-s-256-a/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
