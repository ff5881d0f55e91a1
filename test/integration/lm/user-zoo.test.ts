/**
 * A user's own zoo entry: `hr1 zoo build --config FILE` builds it, `hr1 zoo list --config FILE`
 * shows it built, and with HR1_ZOO_CONFIG it is lm/<name> like a built-in target; a bad file is
 * one typed error line naming the entry and the field.
 */
import test from 'ava';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runEpisode } from '../../../harness/index.ts';
import { EVAL_SPLIT, envFactory, taskIds } from '../../../policies/targets/lm/bc.ts';
import { lmModel } from '../../../policies/targets/lm/model.ts';
import { hr1, waitFor } from '../processes.ts';

const dir = mkdtempSync(join(tmpdir(), 'hr1-user-zoo-'));
test.after.always(() => rmSync(dir, { recursive: true, force: true }));
const file = join(dir, 'my-zoo.yaml');
writeFileSync(file, 'zoo:\n  - { name: my-tiny, envs: [alfworld], dModel: 32, nLayers: 1, nHeads: 2, dFf: 64, maxLen: 128, episodes: 4, steps: 3, seed: 5, note: mine }\n');
const env = { HR1_ZOO_DIR: join(dir, 'zoo') };

test.serial('user zoo - hr1 zoo build --config builds the file\'s entries; zoo list shows them built; HR1_ZOO_CONFIG makes lm/<name> a target', async (t) => {
  const b = hr1(['zoo', 'build', '--config', file, '--jobs', '1'], env);
  t.is(await b.exited, 0, b.out());
  t.regex(b.out(), /lm\/my-tiny: built in/);
  t.regex(b.out(), /1 target\(s\) built or cached/);
  const l = hr1(['zoo', 'list', '--config', file, '--json'], env);
  t.is(await l.exited, 0, l.out());
  const rows = JSON.parse(l.out().trim().split('\n').at(-1)!) as { name: string; built: string; source: string; note: string }[];
  const mine = rows.find((r) => r.name === 'my-tiny');
  t.deepEqual(mine && { built: mine.built, source: mine.source, note: mine.note }, { built: 'yes', source: 'config', note: 'mine' });
  t.is(rows.find((r) => r.name === 'alf-m-256-a')?.source, 'built-in');
  // in this process: the variable, as every other command takes it
  process.env['HR1_ZOO_CONFIG'] = file;
  process.env['HR1_ZOO_DIR'] = env.HR1_ZOO_DIR;
  const m = await lmModel('my-tiny');
  try {
    const rec = await runEpisode(envFactory('alfworld', taskIds('alfworld', EVAL_SPLIT.alfworld)[0]!), { model: m, seed: 1 });
    t.true(rec.steps.length > 0);
    t.is(m.name, 'lm/my-tiny');
  } finally {
    await m.release();
  }
});

test.serial('user zoo - a bad zoo file is one error line naming the entry and the field, exit 2, before any build', async (t) => {
  const bad = join(dir, 'bad.yaml');
  writeFileSync(bad, 'zoo:\n  - { name: my-bad, envs: [alfworld], dModel: 30, nLayers: 1, nHeads: 4, dFf: 64, maxLen: 128, episodes: 4, steps: 3, seed: 5 }\n');
  const p = hr1(['zoo', 'build', '--config', bad], env);
  t.is(await p.exited, 2, p.out());
  t.regex(p.out(), /^hr1: .*LM_BAD_CONFIG.*bad\.yaml: zoo\[0\] \(my-bad\)\.nHeads: must divide dModel \(30\)/m);
  t.notRegex(p.out(), /\n\s+at /, 'no stack');
});

test.serial('user zoo - SIGTERM while a sketch build draws its synthetic tasks stops it (exit 143) within the draw, not after it', async (t) => {
  // 400,000 tasks: drawing them alone takes many minutes here; the signal must not wait for them
  t.timeout(90_000);
  const big = join(dir, 'big.yaml');
  writeFileSync(big, 'zoo:\n  - { name: my-big-sketch, envs: [dbbench], kind: sketch, dModel: 64, nLayers: 1, nHeads: 2, dFf: 128, maxLen: 256, episodes: 400000, steps: 10, batch: 8, lr: 0.001, seed: 1 }\n');
  const p = hr1(['zoo', 'build', '--config', big, '--jobs', '1'], env);
  t.teardown(() => void p.child.kill('SIGKILL'));
  await waitFor(p, /drawing 400000 synthetic tasks/, 60_000);
  await new Promise((r) => setTimeout(r, 1500));
  p.child.kill('SIGTERM');
  t.is(await p.exited, 143, p.out());
  t.notRegex(p.out(), /sketch examples; training/, 'stopped while drawing');
});
