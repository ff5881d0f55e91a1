/** Harness benchmark: the cost of a sandboxed hook call, and the harness's overhead on episodes. */
import { expert, loadGames, reset, step } from '../envs/alfworld/index.ts';
import { alfworldEnv } from '../envs/alfworld/session.ts';
import { baseHarness, composeHarness } from './canonical.ts';
import { HarnessError } from './errors.ts';
import { expertModel } from './models.ts';
import { runEpisode } from './runtime.ts';
import { CodeSandbox } from './sandbox.ts';

/** the patch the bench runs: two rules and two code hooks, all on hot hook points */
export const BENCH_PATCH = {
  skills: ['Open a closed receptacle before you look for objects in it.'],
  rules: [
    { hook: 'preDecision', when: { any: [{ pred: 'nothingHappens' }, { pred: 'repeatedObservation' }] }, effect: { type: 'hint', message: '{{last.action}} changed nothing; try another action.' } },
    { hook: 'preAction', when: { all: [{ pred: 'proposedRepeatsLast' }, { pred: 'nothingHappens' }] }, effect: { type: 'block_and_prompt', message: 'That did nothing last time.' } },
  ],
  code: [
    { hook: 'preAction', source: "function hook(ctx, nb) {\n  const seen = ctx.history.filter((h) => h.action === ctx.proposed.action).length;\n  return seen >= 3 ? { type: 'block_and_prompt', message: 'You did that ' + seen + ' times.' } : null;\n}" },
    { hook: 'postFeedback', source: "function hook(ctx, nb) {\n  nb.visits = (nb.visits || 0) + 1;\n  if (ctx.pred.stepLimitNear) return 'Few steps left: finish the task.';\n  return null;\n}" },
  ],
};

export interface HarnessBench {
  /** one sandboxed code-hook call (ctx to JSON, call, result parsed), microseconds */
  hookP50Us: number;
  hookP99Us: number;
  /** wall time of episodes through the harness with BENCH_PATCH ÷ the bare env loop (same games, same expert actions) */
  episodeOverheadRatio: number;
  /** the same with no patch (adapter, ctx, record and admissible lists only) */
  baseOverheadRatio: number;
  bareEpisodeMs: number;
  harnessEpisodeMs: number;
  episodes: number;
  hookCalls: number;
}

function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(p * s.length))] ?? 0;
}

/**
 * @example
 * const b = await benchHarness({ seconds: 4 }); // { hookP50Us, hookP99Us, episodeOverheadRatio, … }
 */
export async function benchHarness(opts: { seconds?: number; games?: number } = {}): Promise<HarnessBench> {
  const seconds = opts.seconds ?? 4;
  if (!(seconds > 0)) throw new HarnessError('HARNESS_BAD_OPTION', `options.seconds must be a positive number (got ${String(opts.seconds)})`, { option: 'seconds' });
  const all = loadGames().games;
  const games = all.filter((_, i) => i % Math.max(1, Math.floor(all.length / (opts.games ?? 20))) === 0).slice(0, opts.games ?? 20);

  // 1. one hook call on a mid-episode ctx (16 steps of history)
  const c = await CodeSandbox.compile(BENCH_PATCH.code[0]!.source);
  if (!c.ok || !c.sandbox) throw new HarnessError('HARNESS_SANDBOX_UNAVAILABLE', `bench hook did not compile: ${c.error ?? '?'}`);
  const history = Array.from({ length: 16 }, (_, i) => ({ step: i + 1, action: `go to cabinet ${i % 5}`, observation: `On the cabinet ${i % 5}, you see a cup 1, a plate 2, and a spoon 3.`, reward: 0, forced: false, rewritten: false, invalidFormat: false }));
  const ctx = { hook: 'preAction', env: 'alfworld', task: { id: games[0]?.id ?? '', goal: 'put a clean mug in coffeemachine.', type: 'pick_clean_then_place_in_recep' }, seed: 0, step: 16, limits: { maxSteps: 49, stepsLeft: 33, historyWindow: 16 }, history, last: history[15], observation: history[15]?.observation, proposed: { text: 'go to cabinet 1', action: 'go to cabinet 1' }, admissible: Array.from({ length: 40 }, (_, i) => `go to cabinet ${i}`), pred: { repeatedAction: false, repeatedObservation: false, nothingHappens: false, invalidFormat: false, sqlError: false, stepLimitNear: false, proposedRepeatsLast: false, proposedInadmissible: false }, blocks: 0, skills: [] };
  const times: number[] = [];
  const until = performance.now() + (seconds * 1000) / 2;
  while (performance.now() < until || times.length < 200) {
    const t = performance.now();
    const out = c.sandbox.call(JSON.stringify(ctx), '{}');
    times.push((performance.now() - t) * 1000);
    if (out.kind !== 'ok') throw new HarnessError('HARNESS_SANDBOX_UNAVAILABLE', `bench hook failed: ${out.kind}`);
  }
  c.sandbox.dispose();

  // 2. episodes: the bare env loop vs the harness, interleaved so both see the same machine state
  const patched = composeHarness(baseHarness(), BENCH_PATCH);
  const model = expertModel();
  let bare = 0;
  let base = 0;
  let harness = 0;
  let episodes = 0;
  const epUntil = performance.now() + (seconds * 1000) / 2;
  while (performance.now() < epUntil || episodes < games.length) {
    const g = games[episodes % games.length]!;
    let t = performance.now();
    let s = reset(g, { protocol: 'react' }).state;
    for (let i = 0; i < 49; i++) {
      const a = expert(g, s);
      if (a === null) break;
      const r = step(g, s, a);
      s = r.state;
      if (r.done) break;
    }
    bare += performance.now() - t;
    t = performance.now();
    await runEpisode(alfworldEnv(g), { model, seed: 0 });
    base += performance.now() - t;
    t = performance.now();
    await runEpisode(alfworldEnv(g), { model, harness: patched, seed: 0 });
    harness += performance.now() - t;
    episodes++;
  }
  const r3 = (x: number): number => Math.round(x * 1000) / 1000;
  return {
    hookP50Us: Math.round(pct(times, 0.5)),
    hookP99Us: Math.round(pct(times, 0.99)),
    episodeOverheadRatio: r3(harness / bare),
    baseOverheadRatio: r3(base / bare),
    bareEpisodeMs: r3(bare / episodes),
    harnessEpisodeMs: r3(harness / episodes),
    episodes,
    hookCalls: times.length,
  };
}
