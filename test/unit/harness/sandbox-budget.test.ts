import test from 'ava';
import { loadGames, alfworldEnv } from '../../../envs/alfworld/index.ts';
import { CodeSandbox, RegexSandbox, STARVED_GUARD_FACTOR, DEFAULT_SMOKE_GAME, baseHarness, composeHarness, expertModel, isInfraStatus, runEpisode } from '../../../harness/index.ts';

const env = alfworldEnv(loadGames().get(DEFAULT_SMOKE_GAME));
const code = (hook: string, source: string) => ({ code: [{ name: 'h', hook, source: `function hook(ctx, nb) { ${source} }` }] });

test('budget - a runaway hook runs out of fuel at the same poll count whatever the wall clock allows', async (t) => {
  // the same endless loop under a short and a long guard: the fuel stops it first both times
  const src = 'function hook(ctx, nb) { let i = 0; for (;;) { i++; } }';
  const outs: unknown[] = [];
  for (const wallGuardMs of [2_000, 60_000]) {
    const r = await CodeSandbox.compile(src, { limits: { wallGuardMs } });
    t.true(r.ok, r.error);
    const o = r.sandbox!.call('{}', '{}');
    r.sandbox!.dispose();
    t.is(o.kind, 'timeout', JSON.stringify(o));
    outs.push(o);
  }
  t.deepEqual(outs[0], outs[1], 'the verdict does not depend on the wall-clock guard');
});

test('budget - the wall-clock guard firing is an infra error (sandbox_error), never a hook timeout', async (t) => {
  // fuel far beyond what the guard allows: only the guard can stop this loop
  const rec = await runEpisode(env, { model: expertModel(), harness: composeHarness(baseHarness(), code('preAction', 'for (;;) {}')), maxSteps: 5, sandbox: { fuelTicks: 1e12, wallGuardMs: 30 } });
  t.is(rec.outcome.status, 'sandbox_error');
  t.true(isInfraStatus(rec.outcome.status));
  t.regex(rec.outcome.error ?? '', /wall-clock guard \(30 ms\).*infra error/);
  t.is(rec.hooks[0]?.counters.timedOut, 0, 'not counted as the hook timing out');
  // with the default limits the same hook is the hook's business: it times out on fuel, the episode goes on
  const ok = await runEpisode(env, { model: expertModel(), harness: composeHarness(baseHarness(), code('preAction', 'for (;;) {}')), maxSteps: 5 });
  t.false(isInfraStatus(ok.outcome.status));
  t.true((ok.hooks[0]?.counters.timedOut ?? 0) > 0);
});

test('budget - a guard that fires while compiling or in a regex rule is an infra error too', async (t) => {
  const top = await runEpisode(env, { model: expertModel(), harness: composeHarness(baseHarness(), { code: [{ name: 'top', hook: 'preAction', source: 'for (;;) {} function hook() { return null; }' }] }), maxSteps: 3, sandbox: { fuelTicks: 1e12, wallGuardMs: 30 } });
  t.is(top.outcome.status, 'sandbox_error');
  t.regex(top.outcome.error ?? '', /compiling/);
  // a catastrophic pattern: with the default fuel it times out (the rule's business), with a guard far below the fuel it is an infra error
  const evil = { p: '^(a+)+$', s: `${'a'.repeat(40)}b` };
  const fuel = new RegexSandbox();
  await fuel.init();
  const byFuel = fuel.test(evil.p, '', evil.s);
  fuel.dispose();
  t.like(byFuel, { ok: false, kind: 'timeout' });
  const guard = new RegexSandbox({ fuelTicks: 1e12, wallGuardMs: 30 });
  await guard.init();
  const byGuard = guard.test(evil.p, '', evil.s);
  guard.dispose();
  t.like(byGuard, { ok: false, kind: 'wallclock' });
});

test('budget - the guard waits while the process is starved of CPU (a busy host), and fires once the call has had the CPU or at STARVED_GUARD_FACTOR × the guard', async (t) => {
  // a fake clock: each reading of the wall clock is 1 ms later; the process's CPU grows at `share` of it
  const run = async (share: number) => {
    let now = 0;
    const clock = { wall: () => ++now, cpu: () => now * share };
    const r = await CodeSandbox.compile('function hook(ctx, nb) { for (;;) {} }', { limits: { fuelTicks: 1e12, wallGuardMs: 50 }, clock });
    t.true(r.ok, r.error);
    const from = now;
    const o = r.sandbox!.call('{}', '{}');
    r.sandbox!.dispose();
    t.is(o.kind, 'wallclock', JSON.stringify(o));
    return now - from;
  };
  const busy = await run(1);
  t.true(busy >= 50 && busy <= 55, `a call that had the CPU: fired at ${busy} ms of wall clock, not at the guard (50)`);
  const half = await run(0.5);
  t.true(half >= 100 && half <= 110, `half the CPU: fired at ${half} ms, not when 50 ms of CPU were used (100)`);
  const starved = await run(0);
  t.true(starved >= 50 * STARVED_GUARD_FACTOR && starved <= 50 * STARVED_GUARD_FACTOR + 5, `no CPU: fired at ${starved} ms, not at the hard stop (${50 * STARVED_GUARD_FACTOR})`);
});
