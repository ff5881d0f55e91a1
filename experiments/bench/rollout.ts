import { listTasks } from '../../envs/registry.ts';
import { rollout, summarizeRecords } from '../../drivers/index.ts';
import { init } from '../../cluster/init.ts';
import { admissible, expert, loadGames, reset, step } from '../../envs/alfworld/index.ts';
import type { EpisodeRecord } from '../../harness/index.ts';
import { table } from '../commands/table.ts';
import { Rng } from '../../cluster/rng.ts';
import { LM_CHUNK, LM_WINDOW } from '../../drivers/rollout.ts';
import { lmModel } from '../../policies/targets/lm/model.ts';
import { resolveConfig } from '../../policies/targets/lm/zoo.ts';
import { playableMeta } from '../../policies/targets/lm/vendor.ts';
import { lmEpisodes, recordEpisodes, replayAll } from './lm.ts';
import { ensureLmTargets } from '../exp/common.ts';

export interface BenchRolloutOptions {
  target: string;
  tasks: number;
  seeds: number;
  /** the learned target of the lm rows, or false for none. @default 'lm/alf-m-256-a' (skipped with a note when not built) */
  lm?: string | false;
  log?: (l: string) => void;
}

/**
 * The lm rows: 64 episodes of a learned target end to end through the embedded cluster (NATS,
 * one target actor, the rollout's defaults for lm targets: 64 in flight) against the model-only
 * rate: the same episodes' decisions replayed through the decision batcher, 64 in flight.
 */
export async function lmRows(target: string, log: (l: string) => void): Promise<{ e2e: number; model: number } | null> {
  const name = target.slice(3);
  if (!playableMeta(resolveConfig(name))) {
    log(`\nlm rows skipped: ${target} is not built (\`hr1 zoo build --only ${name}\`, about 10 minutes here)`);
    return null;
  }
  // built before the decode graph: re-exported from its checkpoint (seconds)
  await ensureLmTargets([target], log);
  const m = await lmModel(name);
  const env = m.meta.config.envs[0]!;
  const episodes = lmEpisodes(env, 64);
  const rec = await recordEpisodes(m, env, 64);
  const decisions = rec.steps;
  const { temperature, topP, maxNewTokens } = m.sampling;
  await m.release();
  // model only: every decision of the 64 episodes, 64 in flight (each stream its own episode), on a fresh model as served
  const served = await lmModel(name);
  const modelMs = await replayAll(64, async (d) => (await served.batcher.decode({ prompt: d.prompt, k: 1, rng: new Rng(d.seed).fork(0), temperature, topP, maxNewTokens }))[0]!, rec.episodes);
  await served.release();
  // end to end through actors over NATS
  const rt = await init({ inProcess: false });
  let e2eMs = 0;
  let records: EpisodeRecord[] = [];
  try {
    await rollout(rt.cluster, { env, target, episodes: lmEpisodes(env, 80).slice(64) }, { cache: null });
    const r = await rollout(rt.cluster, { env, target, episodes }, { cache: null });
    e2eMs = r.stats.ms;
    records = r.records;
  } finally {
    await rt.shutdown();
  }
  const steps = records.reduce((a, r) => a + r.steps.length, 0);
  if (steps !== decisions) log(`note: the episodes through actors took ${steps} decisions, the recorded ones ${decisions}`);
  const e2e = (episodes.length / e2eMs) * 1000;
  const model = (episodes.length / modelMs) * 1000;
  log(`\n${target} (learned, ${env}, ${episodes.length} episodes, ${decisions} decisions, vanilla harness):`);
  log(
    table(
      ['what', 'episodes/s', 'decisions/s', 'success', '÷ model only'],
      [
        [`end to end, nats, 1 target actor, ${LM_CHUNK * LM_WINDOW} in flight`, e2e.toFixed(2), ((steps / e2eMs) * 1000).toFixed(0), `${(summarizeRecords(records).success * 100).toFixed(1)}%`, (e2e / model).toFixed(2)],
        ['model only: the same decisions through the batcher, 64 in flight', model.toFixed(2), ((decisions / modelMs) * 1000).toFixed(0), '-', '1.00'],
      ],
    ),
  );
  log(`target: lm end to end ≥ 0.70 of the model-only rate: ${(e2e / model).toFixed(2)} (${e2e / model >= 0.7 ? 'met' : 'NOT met'})`);
  return { e2e, model };
}

/** Replays the records' actions on the bare env (no harness, no model, no messages): the env-only bound. */
function envOnly(records: EpisodeRecord[], withOracle: boolean): { steps: number; ms: number } {
  const games = loadGames();
  const t0 = performance.now();
  let steps = 0;
  for (const r of records) {
    const g = games.get(r.taskId);
    let s = reset(g, { protocol: 'react' }).state;
    if (withOracle) {
      admissible(g, s);
      expert(g, s);
    }
    for (const st of r.steps) {
      if (/^think\s*:/i.test(st.action)) continue;
      s = step(g, s, st.action).state;
      // what a rollout asks of the env besides the step: the admissible commands (ctx) and the oracle (the sim's competence)
      if (withOracle && !s.done) {
        admissible(g, s);
        expert(g, s);
      }
      steps++;
    }
  }
  return { steps, ms: performance.now() - t0 };
}

/**
 * `hr1 bench rollout`: ALFWorld episodes end to end with a SIMULATED target (harness, model,
 * actors, transport) next to the env-only bound, in one run: in-process vs NATS, 0/1/2 env threads.
 */
export async function benchRollout(o: BenchRolloutOptions): Promise<void> {
  const log = o.log ?? console.log;
  const tasks = listTasks('alfworld', 'all').slice(0, o.tasks);
  const episodes = Array.from({ length: o.seeds }, (_, k) => tasks.map((taskId) => ({ taskId, seed: k + 1 }))).flat();
  log(`bench rollout: ${episodes.length} ALFWorld episodes, target ${o.target} (SIMULATED), vanilla harness; every row the same episodes`);
  const rows: (string | number)[][] = [];
  let bound = 0;
  let reference: EpisodeRecord[] | undefined;
  for (const mode of ['inproc', 'nats'] as const) {
    const rt = await init({ inProcess: mode === 'inproc' });
    try {
      for (const envThreads of [0, 1, 2, -1]) {
        if (envThreads === -1) {
          // an EnvActor replica (2 threads) serving every target's steps
          await rollout(rt.cluster, { env: 'alfworld', target: o.target, episodes: episodes.slice(0, 48) }, { cache: null, envActors: 1, envActorThreads: 2, concurrency: 128 });
          const r = await rollout(rt.cluster, { env: 'alfworld', target: o.target, episodes }, { cache: null, envActors: 1, envActorThreads: 2, chunk: 64, window: 4, concurrency: 128 });
          const steps = r.records.reduce((n, x) => n + x.outcome.steps, 0);
          rows.push([`end to end, ${rt.mode}, EnvActor (2 threads)`, ((episodes.length / r.stats.ms) * 1000).toFixed(0), ((steps / r.stats.ms) * 1000).toFixed(0), `${(summarizeRecords(r.records).success * 100).toFixed(1)}%`, '']);
          continue;
        }
        // warm up the actor (and its pool) before timing
        await rollout(rt.cluster, { env: 'alfworld', target: o.target, episodes: episodes.slice(0, 48) }, { cache: null, envThreads, concurrency: envThreads > 0 ? 128 : 16 });
        const r = await rollout(rt.cluster, { env: 'alfworld', target: o.target, episodes }, { cache: null, envThreads, chunk: envThreads > 0 ? 64 : 16, window: 4, concurrency: envThreads > 0 ? 128 : 16 });
        reference ??= r.records;
        const s = summarizeRecords(r.records);
        const steps = r.records.reduce((n, x) => n + x.outcome.steps, 0);
        const sps = (steps / r.stats.ms) * 1000;
        rows.push([`end to end, ${rt.mode}, ${envThreads === 0 ? 'env inline' : `env pool ${envThreads} thread${envThreads > 1 ? 's' : ''}`}`, ((episodes.length / r.stats.ms) * 1000).toFixed(0), sps.toFixed(0), `${(s.success * 100).toFixed(1)}%`, '']);
      }
    } finally {
      await rt.shutdown();
    }
  }
  // the bounds: the same actions on the bare step function, one thread, best of 3; and with the
  // admissible commands and the oracle's action computed after each step, as a rollout needs them
  const bestOf = (withOracle: boolean) => {
    let best = { steps: 0, ms: Infinity };
    for (let i = 0; i < 3; i++) {
      const b = envOnly(reference!, withOracle);
      if (b.ms < best.ms) best = b;
    }
    return best;
  };
  const bare = bestOf(false);
  const full = bestOf(true);
  bound = (bare.steps / bare.ms) * 1000;
  const needed = (full.steps / full.ms) * 1000;
  const e2e = rows.length;
  rows.push(['env only: step (same actions, 1 thread)', ((reference!.length / bare.ms) * 1000).toFixed(0), bound.toFixed(0), '-', '']);
  rows.push(['env only: step + admissible + oracle (1 thread)', ((reference!.length / full.ms) * 1000).toFixed(0), needed.toFixed(0), '-', '']);
  for (const r of rows) r[4] = `${(Number(r[2]) / bound).toFixed(2)} / ${(Number(r[2]) / needed).toFixed(2)}`;
  log(table(['what', 'episodes/s', 'steps/s', 'success', '÷ step-only / ÷ step+adm+oracle'], rows));
  const bestE2E = Math.max(...rows.slice(0, e2e).map((r) => Number(r[2])));
  log(`\ntarget: end to end ≥ 0.50 of the env-only bound. Best end to end: ${(bestE2E / bound).toFixed(2)} of the bare step function (${bestE2E / bound >= 0.5 ? 'met' : 'NOT met'}), ${(bestE2E / needed).toFixed(2)} of the env work a rollout needs (${bestE2E / needed >= 0.5 ? 'met' : 'NOT met'})`);
  if (o.lm !== false) await lmRows(o.lm ?? 'lm/alf-m-256-a', log);
}
