import test from 'ava';
import { BUILTIN_ENV_NAMES, BUILTIN_ENV_SPLITS } from '../../../envs/catalog.ts';
import { BUILTIN_ENVS, ENV_NAMES } from '../../../envs/registry.ts';

test('env catalog - the CLI\'s static names and splits are the registry\'s descriptors', (t) => {
  t.deepEqual([...BUILTIN_ENV_NAMES], [...ENV_NAMES]);
  for (const [name, d] of Object.entries(BUILTIN_ENVS)) t.deepEqual([...BUILTIN_ENV_SPLITS[name as keyof typeof BUILTIN_ENV_SPLITS]], [...d.splits.names], name);
});
