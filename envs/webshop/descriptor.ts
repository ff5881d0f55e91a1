/** WebShop in the env registry: text-mode sessions over the vendored (or a user's) catalog. */
import { fileURLToPath } from 'node:url';
import { EnvError, type EnvDescriptor } from '../contract.ts';
import { loadWebshop } from './index.ts';
import { WEBSHOP_MAX_STEPS, webshopEnv } from './session.ts';

export const webshop: EnvDescriptor = {
  name: 'webshop',
  title: 'WebShop',
  column: 1,
  splits: { names: ['train', 'dev', 'test', 'all'], train: 'train', heldout: 'dev', test: ['dev', 'test'] },
  metrics: ['score', 'success'],
  worker: fileURLToPath(new URL('./worker.ts', import.meta.url)),
  pooled: false,
  // the registry's sessions use the react protocol
  maxSteps: () => WEBSHOP_MAX_STEPS.react,
  listTasks(split, opts) {
    const goals = loadWebshop(opts.data ? { dataDir: opts.data } : {}).goals;
    const ids = goals.filter((g) => split === 'all' || g.split === split).map((g) => g.id);
    if (ids.length === 0) throw new EnvError('UNKNOWN_SPLIT', `webshop has no goals in split "${split}"; use train, dev, test or all`, { data: { env: 'webshop', split } });
    return ids;
  },
  session: (taskId, opts) => webshopEnv(taskId, opts.data ? { dataDir: opts.data } : {}),
};
