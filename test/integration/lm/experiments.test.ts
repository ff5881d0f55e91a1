/**
 * The zoo wired into the experiments: a sweep builds a missing lm/ target on demand and plays it
 * only on the envs it was trained on; main refuses envs a model never saw; coevolve's fine-tuned
 * target of lm/X is the zoo's lm/X-ft.
 */
import test from 'ava';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

// this test process's own zoo folder (ava runs each file in its own process)
const zooRoot = mkdtempSync(join(tmpdir(), 'hr1-zoo-exp-'));
process.env['HR1_ZOO_DIR'] = zooRoot;
// no vendored zoo: the sweep must build its lm/ target on demand
process.env['HR1_ZOO_VENDORED'] = 'none';
const { init } = await import('../../../cluster/init.ts');
const { runExpMain, runExpSweep, tunedOf, ExpError } = await import('../../../experiments/exp/index.ts');
const { modelDir, resolveConfig } = await import('../../../policies/targets/lm/zoo.ts');

const root = mkdtempSync(join(tmpdir(), 'hr1-exp-lm-'));
test.after.always(() => {
  rmSync(root, { recursive: true, force: true });
  rmSync(zooRoot, { recursive: true, force: true });
});

test('exp sweep - an lm/ target is built on demand and plays only the envs it was trained on, next to a sim target', async (t) => {
  const rt = await init({ inProcess: true });
  const logs: string[] = [];
  try {
    const lm = 'lm/alf-xs-192-a@tiny';
    t.false(existsSync(join(modelDir(resolveConfig('alf-xs-192-a@tiny')), 'model.onnx')));
    const r = await runExpSweep(
      { inProcess: true, progress: 'silent', out: join(root, 'sweep'), envs: ['alfworld', 'dbbench'], targets: [lm, 'sim/qwen-3b'], test: { tasks: 3, seeds: [0] }, train: { packets: 1, batchSize: 10 } },
      { stdout: (s) => logs.push(s), cluster: rt.cluster },
    );
    t.true(existsSync(join(modelDir(resolveConfig('alf-xs-192-a@tiny')), 'model.onnx')), 'built into HR1_ZOO_DIR');
    const cells = new Set(r.rows.map((x) => `${x.target} ${x.env} ${x.method}`));
    t.true(cells.has(`${lm} alfworld vanilla`));
    t.true(cells.has(`${lm} alfworld prompted-editor`));
    t.false([...cells].some((c) => c.startsWith(`${lm} dbbench`)), 'an ALFWorld model is not played on DBBench');
    t.true(cells.has('sim/qwen-3b dbbench vanilla') && cells.has('sim/qwen-3b alfworld vanilla'));
    t.true(r.meta.simulated.includes('sim/qwen-3b') && !r.meta.simulated.includes(lm));
    t.true(r.rows.filter((x) => x.target === lm).every((x) => x.outcomes.length === 3));
    t.regex(logs.join('\n'), /lm\/alf-xs-192-a@tiny/);
  } finally {
    await rt.shutdown();
  }
});

test('exp main / coevolve - an lm/ target on an env it never saw is a config error naming --envs; its fine-tuned version is the zoo\'s -ft', async (t) => {
  const e = await t.throwsAsync(runExpMain({ inProcess: true, progress: 'silent', out: join(root, 'main'), target: 'lm/alf-s-256-a', envs: ['alfworld', 'dbbench'] }), { instanceOf: ExpError });
  t.regex(e!.message, /lm\/alf-s-256-a was trained on alfworld only, not dbbench; give --envs alfworld/);
  t.is(tunedOf('lm/alf-s-256-a'), 'lm/alf-s-256-a-ft');
  t.is(tunedOf('lm/alf-xs-192-a@tiny'), 'lm/alf-xs-192-a-ft@tiny');
  t.throws(() => tunedOf('lm/alf-s-256-b'), { message: /no fine-tuned variant of lm\/alf-s-256-b/ });
  t.is(tunedOf('sim/qwen-3b'), 'sim/qwen-8b');
});
