import test from 'ava';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LAYERS, upwardImports } from './layers.ts';

test('layers - no import points up (experiments → drivers → actors → policies → learner → harness → envs → cluster)', (t) => {
  const v = upwardImports('.');
  t.deepEqual(v.map((x) => `${x.file}:${x.line} (${x.from}) imports ${x.imports} (${x.to})`), []);
});

test('layers - the check finds an import that points up, static or dynamic', (t) => {
  const root = mkdtempSync(join(tmpdir(), 'hr1-layers-'));
  try {
    for (const l of LAYERS) mkdirSync(join(root, l), { recursive: true });
    writeFileSync(join(root, 'envs', 'bad.ts'), "import { rollout } from '../drivers/rollout.ts';\nexport const x = 1;\n");
    writeFileSync(join(root, 'harness', 'lazy.ts'), "export const f = () => import('../actors/target.ts');\n");
    writeFileSync(join(root, 'actors', 'ok.ts'), "import { x } from '../envs/bad.ts';\nexport const y = x;\n");
    const v = upwardImports(root);
    t.deepEqual(v.map((x) => [x.file.replace(/^.*?(envs|harness|actors)\//, '$1/'), x.line, x.to]).sort(), [['envs/bad.ts', 1, 'drivers'], ['harness/lazy.ts', 1, 'actors']]);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});
