import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { WorkerPool } from '../../cluster/pool.ts';
import { table } from './table.ts';
import { CommandError } from './errors.ts';

export interface VerifyEnvOptions {
  data?: string;
  grammar?: 'legacy' | 'current' | 'both';
  perturbations?: number;
  db?: string;
  file?: string;
}

/** `hr1 envs verify <env>`: experts and walkthroughs on every shipped task; non-zero exit on failure. */
export async function verifyEnv(env: string, o: VerifyEnvOptions): Promise<boolean> {
  if (env === 'alfworld') {
    const { verifyAlfworld } = await import('../../envs/alfworld/index.ts');
    const r = verifyAlfworld({ ...(o.data ? { dataDir: o.data } : {}), grammar: o.grammar ?? 'both', ...(o.perturbations !== undefined ? { perturbations: o.perturbations } : {}), log: (l) => console.error(l) });
    console.log(table(['task type', 'games', 'walkthrough', 'expert from start', 'expert perturbed', 'perturbed runs', 'dead ends skipped'], r.rows.map((x) => [x.taskType, x.games, x.walkthrough, x.expertStart, x.expertPerturbed, x.perturbedRuns, x.deadEnds])));
    console.log(`\nalfworld: ${r.games} games, ${r.failures.length} failure(s) in ${(r.ms / 1000).toFixed(1)} s: ${r.ok ? 'OK' : 'FAILED'}`);
    for (const f of r.failures.slice(0, 20)) console.log(`  ${JSON.stringify(f)}`);
    return r.ok;
  }
  if (env === 'dbbench') {
    const { verifyDbbench, closeAll } = await import('../../envs/dbbench/index.ts');
    try {
      const r = await verifyDbbench({ ...(o.file ? { file: o.file } : {}), ...(o.data ? { file: o.data } : {}), ...(o.db ? { db: o.db } : {}) });
      console.log(table(['type', 'matched', 'total'], r.perType.map((x) => [x.type, x.matched, x.total])));
      console.log(`\ndbbench on ${r.backend}: ${r.matched}/${r.total} (${(r.rate * 100).toFixed(1)}%), threshold ${(r.threshold * 100).toFixed(0)}%: ${r.ok ? 'OK' : 'FAILED'}; reads whose reference SQL alone reproduces the label: ${r.readSqlAgreement.agree}/${r.readSqlAgreement.total}`);
      for (const m of r.misses.slice(0, 20)) console.log(`  miss: ${m.taskId} (${m.type})`);
      return r.ok;
    } finally {
      await closeAll();
    }
  }
  if (env === 'webshop') {
    const mod = (await import('../../envs/webshop/index.ts')) as unknown as { verifyWebshop: (o: { dataDir?: string }) => Promise<{ solved: number; total: number; ok: boolean }> | { solved: number; total: number; ok: boolean } };
    const r = await mod.verifyWebshop({ ...(o.data ? { dataDir: o.data } : {}) });
    console.log(`webshop: expert reached reward 1 on ${r.solved}/${r.total} goals: ${r.ok ? 'OK' : 'FAILED'}`);
    return r.ok;
  }
  throw new CommandError('BAD_ENV', `unknown env "${env}"; choose alfworld, dbbench or webshop`);
}

/** `hr1 envs replay alfworld --game … < actions.txt`. */
export async function replayEnv(env: string, o: { data?: string; game: string; grammar?: 'legacy' | 'current'; actions?: string }): Promise<void> {
  if (env !== 'alfworld') throw new CommandError('BAD_ENV', `replay is available for alfworld only, got "${env}"; run hr1 envs replay alfworld --game …`);
  const { replayAlfworld } = await import('../../envs/alfworld/index.ts');
  let text: string;
  try {
    text = o.actions ? readFileSync(o.actions, 'utf8') : readFileSync(0, 'utf8');
  } catch (e) {
    throw new CommandError('BAD_FILE', `${o.actions ? `--actions ${o.actions}` : 'stdin'}: cannot read the actions (${(e as Error).message}); pass a text file with one action a line`, { cause: e });
  }
  const actions = text.split('\n').map((l) => l.trim()).filter((l) => l.length > 0 && !l.startsWith('#'));
  for (const line of replayAlfworld({ game: o.game, actions, ...(o.data ? { dataDir: o.data } : {}), ...(o.grammar ? { grammar: o.grammar } : {}) })) console.log(line);
}

/** `hr1 bench envs <env>`: rates direct and through the worker pool. */
export async function benchEnv(env: string, o: { seconds: number; threads: number; db?: string }): Promise<void> {
  await benchEnvDirect(env, o);
  const r = await benchRegistryOpens(env, o.seconds);
  console.log(`\n${env} episodes opened through the registry (envFactory(env, task).open(seed) and close, as a rollout opens each episode; no reset): ${r.toFixed(0)}/s`);
}

/**
 * What a rollout pays per episode before the env's own reset: the registry's session for a task id,
 * over the env's held-out split. A set-up cost here is paid by every episode of every rollout (until
 * 2026-12-07 a DBBench session parsed its whole task set: 275 opens/s over v0.2/dev, ~60 over
 * v0.2/standard; after, ~170,000, a stat of the file each).
 */
export async function benchRegistryOpens(env: string, seconds: number): Promise<number> {
  const { envFactory, listTasks } = await import('../../envs/registry.ts');
  const ids = listTasks(env);
  let n = 0;
  const t0 = performance.now();
  const end = t0 + seconds * 1000;
  while (n < 2 || performance.now() < end) {
    const session = envFactory(env, ids[n % ids.length]!).open(n);
    await session.close();
    n++;
  }
  return (n / (performance.now() - t0)) * 1000;
}

async function benchEnvDirect(env: string, o: { seconds: number; threads: number; db?: string }): Promise<void> {
  if (env === 'alfworld') {
    const { benchAlfworld, loadGames, reset } = await import('../../envs/alfworld/index.ts');
    const d = benchAlfworld({ seconds: o.seconds });
    console.log(table(['alfworld, direct (1 thread)', 'figure'], [
      ['resets/s', d.resetsPerSec.toFixed(0)],
      ['reset p50', `${(d.resetMsP50 * 1000).toFixed(1)} µs`],
      ['steps/s', d.stepsPerSec.toFixed(0)],
      ['steps/s with admissible commands each step', d.stepsPerSecWithAdmissible.toFixed(0)],
    ]));
    const pool = new WorkerPool({ module: fileURLToPath(new URL('../../envs/alfworld/worker.ts', import.meta.url)), threads: o.threads, batchSize: 64 });
    try {
      const games = loadGames().games;
      // 512 episodes in flight; each step travels (state in, state out) through the pool
      const eps = Array.from({ length: 512 }, (_, i) => {
        const g = games[i % games.length]!;
        return { game: g.id, state: reset(g, { protocol: 'raw' }).state };
      });
      // warm up: every thread builds its per-game caches and JITs on first touch
      for (let i = 0; i < 3; i++) await pool.runMany('expertStep', eps);
      let steps = 0;
      const t0 = performance.now();
      const end = t0 + o.seconds * 1000;
      await Promise.all(
        eps.map(async (ep) => {
          let state = ep.state;
          const g = games.find((x) => x.id === ep.game)!;
          while (performance.now() < end) {
            const r = (await pool.run('expertStep', { game: ep.game, state })) as { state: typeof state; done: boolean };
            steps++;
            state = r.done ? reset(g, { protocol: 'raw' }).state : r.state;
          }
        }),
      );
      const rate = (steps / (performance.now() - t0)) * 1000;
      console.log(`\nalfworld through the pool (${o.threads} threads, 64 steps a message, 512 episodes in flight, expert action from the worker, memoised per state (state-memo.ts): an episode replayed after a reset can be answered from the memo): ${rate.toFixed(0)} steps/s, ${(rate / o.threads).toFixed(0)} per thread`);
    } finally {
      await pool.destroy();
    }
    return;
  }
  if (env === 'dbbench') {
    const { benchDbbench, closeAll } = await import('../../envs/dbbench/index.ts');
    try {
      const rows: (string | number)[][] = [];
      for (const backend of o.db ? [o.db] : ['sqlite']) {
        const r = await benchDbbench({ backend, seconds: o.seconds });
        rows.push([r.backend, r.setupsPerSec.toFixed(0), r.queryStepsPerSec.toFixed(0)]);
      }
      console.log(table(['dbbench backend', 'episode set-ups/s', 'query steps/s'], rows));
    } finally {
      await closeAll();
    }
    return;
  }
  if (env === 'webshop') {
    const ws = await import('../../envs/webshop/index.ts');
    const r = await ws.benchWebshop({ seconds: o.seconds });
    console.log(table(['webshop, direct (1 thread)', 'figure'], Object.entries(r).map(([k, v]) => [k, typeof v === 'number' ? (Number.isInteger(v) ? String(v) : v.toFixed(3)) : String(v)])));
    const pool = new WorkerPool({ module: fileURLToPath(new URL('../../envs/webshop/worker.ts', import.meta.url)), threads: o.threads, batchSize: 64 });
    try {
      const env = ws.loadWebshop();
      const goals = env.goals;
      const eps = Array.from({ length: 256 }, (_, i) => ws.reset(env, goals[i % goals.length]!.id, {}).state);
      for (let i = 0; i < 3; i++) await pool.runMany('expertStep', eps.map((state) => ({ state })));
      let steps = 0;
      const t0 = performance.now();
      const end = t0 + o.seconds * 1000;
      await Promise.all(
        eps.map(async (s0, i) => {
          let state = s0;
          while (performance.now() < end) {
            const r = (await pool.run('expertStep', { state })) as { state: typeof state; done: boolean };
            steps++;
            state = r.done ? ws.reset(env, goals[(i + steps) % goals.length]!.id, {}).state : r.state;
          }
        }),
      );
      const rate = (steps / (performance.now() - t0)) * 1000;
      console.log(`\nwebshop through the pool (${o.threads} threads, 64 steps a message, 256 episodes in flight, expert action computed in the worker): ${rate.toFixed(0)} steps/s, ${(rate / o.threads).toFixed(0)} per thread`);
    } finally {
      await pool.destroy();
    }
    return;
  }
  throw new CommandError('BAD_ENV', `unknown env "${env}"; choose alfworld, dbbench or webshop`);
}

/** `hr1 envs verify <env>` as the CLI runs it: the report, and exit code 1 when a check failed. */
export async function verifyEnvCommand(env: string, o: VerifyEnvOptions): Promise<void> {
  if (!(await verifyEnv(env, o))) process.exitCode = 1;
}
