/**
 * The envs as the harness sees them: task lists and session factories by env name, so actors
 * can open any task from a plain-data request.
 */
import { Hr1Error } from '../cluster/errors.ts';
import { loadGames } from './alfworld/index.ts';
import { getTask, loadTasks, SHIPPED_SETS } from './dbbench/index.ts';
import { alfworldEnv, dbbenchEnv, webshopEnv, type EnvFactory } from '../harness/index.ts';
import { loadWebshop } from './webshop/index.ts';
import type { Stepper } from '../actors/env.ts';
import { pooledAlfworldEnv } from './alfworld/pooled-session.ts';

export const ENV_NAMES = ['alfworld', 'dbbench', 'webshop'] as const;
export type EnvName = (typeof ENV_NAMES)[number];

/** Env options that travel with a rollout request (plain data). */
export interface EnvOptions {
  /** ALFWorld: a user's json_2.1.1-layout dir; DBBench: an AgentBench jsonl */
  data?: string | undefined;
  /** ALFWorld: react (49 steps, default) or agentbench (35 steps, AVAILABLE ACTIONS, snapping); WebShop uses react (15 steps) */
  protocol?: 'react' | 'agentbench' | undefined;
  /** DBBench: sqlite (default) or mysql://… */
  db?: string | undefined;
}

/** Default task split per env. */
export const DEFAULT_SPLIT: Record<EnvName, string> = { alfworld: 'valid_seen', dbbench: 'v0.2/dev', webshop: 'dev' };

function unknownEnv(env: string): Hr1Error {
  return new Hr1Error('UNKNOWN_ENV', `unknown env "${env}"; choose one of ${ENV_NAMES.join(', ')}`, { data: { env } });
}

/** Task ids of a split, in a stable order. */
export function listTasks(env: string, split?: string, opts: EnvOptions = {}): string[] {
  if (env === 'alfworld') {
    const s = split ?? DEFAULT_SPLIT.alfworld;
    const games = loadGames(opts.data ? { dataDir: opts.data } : {}).games;
    const ids = games.filter((g) => s === 'all' || g.split === s).map((g) => g.id);
    if (ids.length === 0) throw new Hr1Error('UNKNOWN_SPLIT', `alfworld has no games in split "${s}"; use valid_seen, valid_train or all`);
    return ids;
  }
  if (env === 'dbbench') {
    const s = opts.data ?? split ?? DEFAULT_SPLIT.dbbench;
    if (!opts.data && !(s in SHIPPED_SETS)) throw new Hr1Error('UNKNOWN_SPLIT', `dbbench has no split "${s}"; use ${Object.keys(SHIPPED_SETS).join(', ')} or --data FILE`);
    return loadTasks({ file: s }).map((t) => t.id);
  }
  if (env === 'webshop') {
    const s = split ?? DEFAULT_SPLIT.webshop;
    const goals = loadWebshop(opts.data ? { dataDir: opts.data } : {}).goals;
    const ids = goals.filter((g) => s === 'all' || g.split === s).map((g) => g.id);
    if (ids.length === 0) throw new Hr1Error('UNKNOWN_SPLIT', `webshop has no goals in split "${s}"; use train, dev, test or all`);
    return ids;
  }
  throw unknownEnv(env);
}

/** A session factory for one task. With `pool`, ALFWorld steps run in the worker pool. */
export function envFactory(env: string, taskId: string, opts: EnvOptions = {}, pool?: Stepper): EnvFactory {
  if (env === 'alfworld') {
    const game = loadGames(opts.data ? { dataDir: opts.data } : {}).get(taskId);
    const o = { protocol: opts.protocol ?? 'react' } as const;
    return pool ? pooledAlfworldEnv(game, pool, o) : alfworldEnv(game, o);
  }
  if (env === 'dbbench') {
    if (opts.data) loadTasks({ file: opts.data });
    else {
      // a fresh process knows no tasks yet: shipped ids start with their set ("v0.2/dev/7")
      const set = Object.keys(SHIPPED_SETS).find((s) => taskId.startsWith(`${s}/`));
      if (set) loadTasks({ file: set });
    }
    return dbbenchEnv(getTask(taskId), opts.db ? { db: opts.db } : {});
  }
  if (env === 'webshop') return webshopEnv(taskId, opts.data ? { dataDir: opts.data } : {});
  throw unknownEnv(env);
}
