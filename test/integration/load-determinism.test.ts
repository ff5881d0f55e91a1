import test from 'ava';
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import { init } from '../../cluster/init.ts';
import { rollout } from '../../drivers/index.ts';
import { listTasks } from '../../envs/registry.ts';
import { canonicalJson, type EpisodeRecord } from '../../harness/index.ts';

// a patch whose code hooks do real work every step: one walks the admissible actions comparing them
// with the proposal character by character (tens of thousands of polls, ~1–30 ms depending on load),
// one runs out of fuel on some steps (a loop bounded by the step number), one keeps a notebook
const patch = {
  skills: ['Look in every receptacle once before going back to one.'],
  code: [
    {
      name: 'closest-admissible',
      hook: 'preAction',
      source: `function hook(ctx, nb) {
        if (!ctx.proposed || !ctx.admissible || ctx.admissible.includes(ctx.proposed.action)) return null;
        const p = ctx.proposed.action;
        let best = null, bestD = 1e9;
        for (let r = 0; r < 20; r++) for (const a of ctx.admissible) {
          let d = Math.abs(a.length - p.length);
          for (let i = 0; i < Math.min(a.length, p.length); i++) if (a[i] !== p[i]) d++;
          if (d < bestD) { bestD = d; best = a; }
        }
        return best ? { type: 'rewrite_action', action: best } : null;
      }`,
    },
    {
      name: 'burn-on-odd-steps',
      hook: 'preDecision',
      source: `function hook(ctx, nb) {
        let x = 0;
        const n = ctx.step % 2 === 1 ? 1e9 : 1000;
        for (let i = 0; i < n; i++) x += i;
        return null;
      }`,
    },
    {
      name: 'count',
      hook: 'postFeedback',
      source: `function hook(ctx, nb) { nb.steps = (nb.steps || 0) + 1; if (ctx.pred.repeatedAction) return { type: 'inject_hint', message: 'Try another action than ' + ctx.last.action }; return null; }`,
    },
  ],
};

const episodes = listTasks('alfworld').slice(0, 12).map((taskId) => ({ taskId, seed: 2 }));

async function run(): Promise<EpisodeRecord[]> {
  const rt = await init({ inProcess: true });
  try {
    return (await rollout(rt.cluster, { env: 'alfworld', target: 'sim/llama-3b', patch, episodes }, { cache: null, concurrency: 12 })).records;
  } finally {
    await rt.shutdown();
  }
}

test.serial('load - a patched eval with code hooks gives byte-identical records alone and beside CPU hogs on every core', async (t) => {
  t.timeout(600_000);
  const alone = await run();
  const timedOut = alone.reduce((s, r) => s + (r.hooks.find((h) => h.id.endsWith('burn-on-odd-steps'))?.counters.timedOut ?? 0), 0);
  t.true(timedOut > 0, 'the burning hook ran out of fuel in the run alone');
  const hogs = Array.from({ length: availableParallelism() * 2 }, () => new Worker('let x = 0; for (;;) { x++; }', { eval: true }));
  let loaded: EpisodeRecord[];
  try {
    await new Promise((r) => setTimeout(r, 200));
    loaded = await run();
  } finally {
    await Promise.all(hogs.map((w) => w.terminate()));
  }
  t.is(canonicalJson(loaded), canonicalJson(alone));
});
