import test from 'ava';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { init } from '../../cluster/init.ts';
import { ConfigError } from '../../cluster/errors.ts';
import { benchConditioning, emptyPacket } from '../../experiments/bench/conditioning.ts';
import { parsePacket } from '../../policies/engineer/index.ts';
import { readFileSync } from 'node:fs';

// a learned target shipped in the repository (vendored), so nothing is built here
const TARGET = 'lm/alf-xs-192-a@tiny';

test('bench conditioning - the teacher on a learned target: own, other and empty packets scored on the same episodes; a packet-blind patch has gain exactly 0', async (t) => {
  t.timeout(600_000);
  const dir = mkdtempSync(join(tmpdir(), 'hr1-cond-'));
  const rt = await init({ inProcess: true });
  try {
    const r = await benchConditioning(rt.cluster, { env: 'alfworld', target: TARGET, engineer: 'teacher', batches: 3, size: 6, out: dir, log: () => {} });
    t.is(r.batches, 3);
    t.is(r.episodes, 18);
    for (const k of ['own_delta', 'other_delta', 'empty_delta'] as const) t.true(Number.isFinite(r[k]) && Math.abs(r[k]) <= 1, k);
    t.true(r.conditioning_gain.lo <= r.conditioning_gain.mean && r.conditioning_gain.mean <= r.conditioning_gain.hi);
    t.is(r.conditioning_gain.n, 18);
    // interventions (forced or rewritten actions per step) are counted, and bounded by the harness's cap
    t.true(r.own_intervention_rate >= 0 && r.own_intervention_rate <= 0.5, `${r.own_intervention_rate}`);
    // the teacher writes nothing for a packet with no failures: the empty packet's patch is vanilla
    t.is(r.empty_delta, 0);
    t.true(Math.abs(r.conditioning_gain.mean - (r.own_delta - r.other_delta)) < 1e-9);
    // the same call gives the same figures (seeded episodes, cached rollouts, seeded bootstrap)
    const again = await benchConditioning(rt.cluster, { env: 'alfworld', target: TARGET, engineer: 'teacher', batches: 3, size: 6, out: dir, log: () => {} });
    t.deepEqual(again, r);
    // a packet-blind control: the same patch for every packet
    const file = join(dir, 'fixed.json');
    writeFileSync(file, JSON.stringify({ skills: ['Use only the places and objects you have seen.'] }));
    const blind = await benchConditioning(rt.cluster, { env: 'alfworld', target: TARGET, engineer: `fixed:${file}`, batches: 3, size: 6, out: dir, log: () => {} });
    t.is(blind.same_patch_rate, 1);
    t.is(blind.conditioning_gain.mean, 0);
    t.is(blind.conditioning_gain.lo, 0);
    t.is(blind.own_delta, blind.other_delta);
    t.is(blind.own_intervention_rate, 0, 'a skill forces or rewrites nothing');
    await t.throwsAsync(benchConditioning(rt.cluster, { env: 'alfworld', target: TARGET, engineer: 'teacher', batches: 1, out: dir, log: () => {} }), { instanceOf: ConfigError, message: /at least 2 batches/ });
    await t.throwsAsync(benchConditioning(rt.cluster, { env: 'alfworld', target: TARGET, engineer: `fixed:${join(dir, 'nope.json')}`, out: dir, log: () => {} }), { instanceOf: ConfigError, message: /not a readable patch file/ });
    await t.throwsAsync(benchConditioning(rt.cluster, { env: 'alfworld', target: TARGET, engineer: 'teacher:nope', out: dir, log: () => {} }), { instanceOf: ConfigError, message: /not a finding kind/ });
    // one finding's mechanisms: a patch only where the packet shows that finding
    const one = await benchConditioning(rt.cluster, { env: 'alfworld', target: TARGET, engineer: 'teacher:noop', batches: 3, size: 6, out: dir, log: () => {} });
    t.is(one.valid_rate, 1);
  } finally {
    await rt.shutdown();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('bench conditioning - the empty packet keeps the counts and shows no episode', (t) => {
  const p = parsePacket(JSON.parse(readFileSync(new URL('../fixtures/packets/alfworld-lm.json', import.meta.url), 'utf8')));
  const e = emptyPacket(p);
  t.is(e.episodes.length, 0);
  t.is(e.batch.episodes, p.batch.episodes);
  t.true(Object.values(e.totals).every((x) => x.count === 0 && x.episodes === 0));
});
