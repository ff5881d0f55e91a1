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

test('hostile corpus - every patch is rejected with a typed verdict or runs contained', async (t) => {
  for (const c of HOSTILE_CORPUS) {
    const v = await validatePatch(c.patch, { smoke: false });
    if (c.expect === 'rejected') {
      t.false(v.ok, `${c.name}: the validator rejects it`);
      t.true(v.errors.length > 0 && v.errors.every((e) => typeof e.code === 'string' && e.message.length > 0), `${c.name}: typed issues`);
    }
    if (!parsePatch(c.patch).ok) continue;
    // a patch that passes the schema runs; whatever it does, the episode goes on
    const rec = await runEpisode(alfworldEnv(game), { model: expertModel(), harness: composeHarness(baseHarness(), c.patch), maxSteps: 30 });
    t.true(['won', 'lost', 'step_limit'].includes(rec.outcome.status), `${c.name}: episode ended normally (${rec.outcome.status} ${rec.outcome.error ?? ''})`);
    const sum: Record<string, number> = {};
    for (const h of rec.hooks) for (const [k, n] of Object.entries(h.counters)) if (typeof n === 'number') sum[k] = (sum[k] ?? 0) + n;
    for (const k of c.counts ?? []) t.true((sum[k] ?? 0) > 0, `${c.name}: counter ${k} recorded (${JSON.stringify(sum)})`);
    if (c.expertWins) t.true(rec.outcome.won, `${c.name}: the expert still wins`);
  }
  // the host is untouched
  t.is(({} as Record<string, unknown>).polluted, undefined);
  t.is(({} as Record<string, unknown>).type, undefined);
  t.is(typeof process.exit, 'function');
  t.is(typeof JSON.stringify({ a: 1 }), 'string');
});
