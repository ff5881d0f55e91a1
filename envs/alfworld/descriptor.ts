/** ALFWorld in the env registry: splits, metrics, options, sessions (inline or through a pool). */
import { fileURLToPath } from 'node:url';
import { EnvError, type EnvDescriptor } from '../contract.ts';
import { loadGames } from './index.ts';
import { alfworldEnv, alfworldMaxSteps } from './session.ts';
import { pooledAlfworldEnv } from './pooled-session.ts';

const gamesOf = (data: string | undefined) => loadGames(data ? { dataDir: data } : {});

export const alfworld: EnvDescriptor = {
  name: 'alfworld',
  title: 'ALFWorld',
  column: 0,
  splits: { names: ['valid_seen', 'valid_train', 'all'], train: 'valid_train', heldout: 'valid_seen', test: ['valid_seen'] },
  metrics: ['success'],
  worker: fileURLToPath(new URL('./worker.ts', import.meta.url)),
  pooled: true,
  maxSteps: (opts) => alfworldMaxSteps(opts.protocol ?? 'react'),
  listTasks(split, opts) {
    const ids = gamesOf(opts.data).games.filter((g) => split === 'all' || g.split === split).map((g) => g.id);
    if (ids.length === 0) throw new EnvError('UNKNOWN_SPLIT', `alfworld has no games in split "${split}"; use valid_seen, valid_train or all`, { data: { env: 'alfworld', split } });
    return ids;
  },
  session(taskId, opts, stepper) {
    const game = gamesOf(opts.data).get(taskId);
    const o = { protocol: opts.protocol ?? 'react' } as const;
    return stepper ? pooledAlfworldEnv(game, stepper, o) : alfworldEnv(game, o);
  },
};
