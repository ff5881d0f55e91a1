/** ALFWorld in the env registry: splits, metrics, options, sessions (inline or through a pool). */
import { fileURLToPath } from 'node:url';
import { Rng } from '../../cluster/rng.ts';
import { EnvError, type EnvDescriptor } from '../contract.ts';
import { loadGames } from './index.ts';
import { alfworldEnv, alfworldMaxSteps } from './session.ts';
import { pooledAlfworldEnv } from './pooled-session.ts';

const gamesOf = (data: string | undefined) => loadGames(data ? { dataDir: data } : {});

/**
 * valid_seen in two fixed halves (a seeded shuffle of its sorted ids; with 140 games, 70 each):
 * `seen_dev` for packets and engineer training, `seen_test` for scoring, for targets trained on
 * valid_train, whose failures on their own training games are not the ones they make elsewhere.
 */
export const SEEN_HALVES = ['seen_dev', 'seen_test'] as const;

function seenHalf(ids: readonly string[], half: (typeof SEEN_HALVES)[number]): string[] {
  const order = new Rng('alfworld|valid_seen halves').shuffle([...ids].sort());
  const cut = Math.ceil(order.length / 2);
  const pick = new Set(half === 'seen_dev' ? order.slice(0, cut) : order.slice(cut));
  return ids.filter((id) => pick.has(id));
}

export const alfworld: EnvDescriptor = {
  name: 'alfworld',
  title: 'ALFWorld',
  column: 0,
  splits: { names: ['valid_seen', 'valid_train', 'all', ...SEEN_HALVES], train: 'valid_train', heldout: 'valid_seen', test: ['valid_seen'] },
  metrics: ['success'],
  worker: fileURLToPath(new URL('./worker.ts', import.meta.url)),
  pooled: true,
  maxSteps: (opts) => alfworldMaxSteps(opts.protocol ?? 'react'),
  listTasks(split, opts) {
    const half = (SEEN_HALVES as readonly string[]).includes(split) ? (split as (typeof SEEN_HALVES)[number]) : null;
    const of = half ? 'valid_seen' : split;
    const all = gamesOf(opts.data).games.filter((g) => of === 'all' || g.split === of).map((g) => g.id);
    const ids = half ? seenHalf(all, half) : all;
    if (ids.length === 0) throw new EnvError('UNKNOWN_SPLIT', `alfworld has no games in split "${split}"; use valid_seen, valid_train, all, seen_dev or seen_test`, { data: { env: 'alfworld', split } });
    return ids;
  },
  session(taskId, opts, stepper) {
    const game = gamesOf(opts.data).get(taskId);
    const o = { protocol: opts.protocol ?? 'react' } as const;
    return stepper ? pooledAlfworldEnv(game, stepper, o) : alfworldEnv(game, o);
  },
};
