import test from 'ava';
import { loadGames } from '../../../envs/alfworld/index.ts';
import { DEFAULT_SMOKE_GAME, HOSTILE_CORPUS, baseHarness, composeHarness, expertModel, parsePatch, runEpisode, validatePatch } from '../../../harness/index.ts';
import { alfworldEnv } from '../../../envs/alfworld/index.ts';

const game = loadGames().get(DEFAULT_SMOKE_GAME);

test('hostile corpus - has at least 40 patches, every category covered', (t) => {
  t.true(HOSTILE_CORPUS.length >= 40);
  const cats = new Set(HOSTILE_CORPUS.map((c) => c.category));
  for (const c of ['time', 'recursion', 'memory', 'output', 'escape', 'pollution', 'throw', 'malformed', 'forcing', 'schema']) t.true(cats.has(c as never), c);
  t.is(new Set(HOSTILE_CORPUS.map((c) => c.name)).size, HOSTILE_CORPUS.length, 'names are unique');
});

// one test per patch (serial, so the host check below runs last): on a starved machine the whole
// corpus takes minutes, and ava's timeout counts from the last test that finished
for (const c of HOSTILE_CORPUS) {
  test.serial(`hostile corpus - ${c.name} (${c.category}): ${c.expect === 'rejected' ? 'rejected with a typed verdict' : 'runs contained'}`, async (t) => {
    const v = await validatePatch(c.patch, { smoke: false });
    if (c.expect === 'rejected') {
      t.false(v.ok, `${c.name}: the validator rejects it`);
      t.true(v.errors.length > 0 && v.errors.every((e) => typeof e.code === 'string' && e.message.length > 0), `${c.name}: typed issues`);
    }
    if (!parsePatch(c.patch).ok) {
      t.not(c.expect, 'contained', `${c.name}: a patch expected to run must parse`);
      return;
    }
    // a patch that passes the schema runs; whatever it does, the episode goes on
    const rec = await runEpisode(alfworldEnv(game), { model: expertModel(), harness: composeHarness(baseHarness(), c.patch), maxSteps: 30 });
    t.true(['won', 'lost', 'step_limit'].includes(rec.outcome.status), `${c.name}: episode ended normally (${rec.outcome.status} ${rec.outcome.error ?? ''})`);
    const sum: Record<string, number> = {};
    for (const h of rec.hooks) for (const [k, n] of Object.entries(h.counters)) if (typeof n === 'number') sum[k] = (sum[k] ?? 0) + n;
    for (const k of c.counts ?? []) t.true((sum[k] ?? 0) > 0, `${c.name}: counter ${k} recorded (${JSON.stringify(sum)})`);
    if (c.expertWins) t.true(rec.outcome.won, `${c.name}: the expert still wins`);
  });
}

test.serial('hostile corpus - after every patch ran, the host is untouched', (t) => {
  t.is(({} as Record<string, unknown>).polluted, undefined);
  t.is(({} as Record<string, unknown>).type, undefined);
  t.is(typeof process.exit, 'function');
  t.is(typeof JSON.stringify({ a: 1 }), 'string');
});
