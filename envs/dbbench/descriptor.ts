/** DBBench in the env registry: the shipped AgentBench sets as splits, SQLite or MariaDB sessions. */
import { EnvError, type EnvDescriptor } from '../contract.ts';
import { getTask, loadTasks, SHIPPED_SETS } from './index.ts';
import { dbbenchEnv, dbbenchMaxSteps } from './session.ts';

const SETS = Object.keys(SHIPPED_SETS);

export const dbbench: EnvDescriptor = {
  name: 'dbbench',
  title: 'DBBench',
  column: 2,
  splits: { names: SETS, train: 'v0.2/standard', heldout: 'v0.2/dev', test: ['v0.2/dev'] },
  metrics: ['success'],
  pooled: false,
  maxSteps: () => dbbenchMaxSteps(),
  listTasks(split, opts) {
    const s = opts.data ?? split;
    if (!opts.data && !SETS.includes(s)) throw new EnvError('UNKNOWN_SPLIT', `dbbench has no split "${s}"; use ${SETS.join(', ')} or --data FILE`, { data: { env: 'dbbench', split: s } });
    return loadTasks({ file: s }).map((t) => t.id);
  },
  // a fresh node process has not loaded the named sets (its factory loads only `data`), so a
  // rollout of one shipped set's tasks names that set as `data`
  rolloutOptions(taskIds, base) {
    if (base.data) return base;
    const sets = new Set(taskIds.map((id) => id.slice(0, id.lastIndexOf('/'))));
    const [set] = [...sets];
    return sets.size === 1 && set && SETS.includes(set) ? { ...base, data: set } : base;
  },
  session(taskId, opts) {
    if (opts.data) loadTasks({ file: opts.data });
    else {
      // a fresh process knows no tasks yet: shipped ids start with their set ("v0.2/dev/7")
      const set = SETS.find((s) => taskId.startsWith(`${s}/`));
      if (set) loadTasks({ file: set });
    }
    return dbbenchEnv(getTask(taskId), opts.db ? { db: opts.db } : {});
  },
};
