import test from 'ava';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEFAULT_BOOTSTRAP, DEFAULT_EDITOR, DEFAULT_MAIN_METHODS, DEFAULT_MAIN_TARGET, DEFAULT_TEST, DEFAULT_TRAIN, ExpError, defaultRunDir, DEFAULT_SWEEP_TARGETS, resolveExpCoevolve, resolveExpMain, resolveExpSweep, runExpMain, tunedOf, coevolvePairs } from '../../../experiments/exp/index.ts';
import { ZOO } from '../../../policies/targets/lm/zoo.ts';
import { engineersDir } from '../../../experiments/exp/engineers.ts';

const dir = mkdtempSync(join(tmpdir(), 'hr1-cfg-'));

function fails(t: import('ava').ExecutionContext, f: () => unknown, path: string, re?: RegExp): ExpError {
  const e = t.throws(f) as ExpError;
  t.true(e instanceof ExpError, String(e));
  t.is(e.path, path);
  t.true(e.message.startsWith(`${path}:`), e.message);
  if (re) t.regex(e.message, re);
  return e;
}

test('config - no options resolve to the documented defaults', (t) => {
  const o = resolveExpMain({});
  t.is(o.target, DEFAULT_MAIN_TARGET);
  t.deepEqual(o.methods, DEFAULT_MAIN_METHODS);
  t.deepEqual(o.test, DEFAULT_TEST);
  t.deepEqual(o.train, DEFAULT_TRAIN);
  t.deepEqual(o.editor, DEFAULT_EDITOR);
  t.deepEqual(o.bootstrap, DEFAULT_BOOTSTRAP);
  t.deepEqual(o.envs, ['alfworld', 'dbbench', 'webshop']);
});

test('config - errors name the option path', (t) => {
  fails(t, () => resolveExpMain({ test: { tasks: -1 } }), 'main.test.tasks', /positive integer.*, got -1$/);
  fails(t, () => resolveExpMain({ test: { seeds: [] } }), 'main.test.seeds', /at least one seed/);
  fails(t, () => resolveExpMain({ train: { batchSize: 50 } }), 'main.train.batchSize', /10 to 20/);
  fails(t, () => resolveExpMain({ envs: ['alfworld', 'minecraft'] }), 'main.envs[1]', /alfworld, dbbench, webshop/);
  fails(t, () => resolveExpMain({ target: 'gpt-4' }), 'main.target', /sim\/<profile>/);
  fails(t, () => resolveExpMain({ editor: { select: 'best' } }), 'main.editor.select', /"first" or "best-of-k"/);
  fails(t, () => resolveExpMain({ bootstrap: { level: 2 } }), 'main.bootstrap.level');
  fails(t, () => resolveExpSweep({ targets: [] }), 'sweep.targets', /at least one target/);
  // engineerTargets: several targets per env joined by +, each checked
  fails(t, () => resolveExpSweep({ engineerTargets: { alfworld: 'lm/alf-s-256-ecrt-xl+lm/nope' } }), 'sweep.engineerTargets.alfworld', /lm\/nope: /);
  fails(t, () => resolveExpSweep({ engineerTargets: { alfworld: 'lm/alf-s-256-ecrt-xl++lm/alf-s-256-e' } }), 'sweep.engineerTargets.alfworld', /empty target/);
  fails(t, () => resolveExpMain({ engineerTargets: { alfworld: 'lm/alf-s-256-ecrt-xl+lm/nope' } }), 'main.engineerTargets.alfworld', /lm\/nope: /);
  const e = fails(t, () => resolveExpMain({ tset: { tasks: 3 } }), 'main');
  t.regex(e.message, /tset/);
});

test('config - a YAML file is read, named options override it, and its bad values name the path', (t) => {
  const f = join(dir, 'a.yaml');
  writeFileSync(f, 'target: sim/llama-8b\ntest:\n  tasks: 12\n  seeds: [3]\n');
  const o = resolveExpMain({ config: f, test: { seeds: [5] } });
  t.is(o.target, 'sim/llama-8b');
  t.deepEqual(o.test, { tasks: 12, seeds: [5] });
  const bad = join(dir, 'b.yaml');
  writeFileSync(bad, 'train:\n  packets: zero\n');
  fails(t, () => resolveExpMain({ config: bad }), 'main.train.packets', /positive integer, got "zero"/);
  const broken = join(dir, 'c.yaml');
  writeFileSync(broken, 'test: [unclosed\n');
  const e = t.throws(() => resolveExpMain({ config: broken })) as ExpError;
  t.is(e.code, 'EXP_CONFIG_FILE');
  t.regex(e.message, /c\.yaml: not valid YAML/);
  t.is((t.throws(() => resolveExpMain({ config: join(dir, 'missing.yaml') })) as ExpError).code, 'EXP_CONFIG_FILE');
});

test('config - the shipped configs are valid', (t) => {
  const d = resolveExpMain({ config: 'experiments/configs/main.default.yaml' });
  t.is(d.target, 'sim/qwen-3b');
  const f = resolveExpMain({ config: 'experiments/configs/main.full.yaml' });
  t.is(f.editor.select, 'best-of-k');
  t.true(f.train.packets > d.train.packets);
  // the lm/ zoo configs: `zoo` expands to every zoo model that is not a -ft variant
  const z = resolveExpSweep({ config: 'experiments/configs/sweep.zoo.yaml' });
  t.deepEqual(z.targets, ZOO.filter((c) => !c.base).map((c) => `lm/${c.name}`));
  t.true(z.targets.length >= 20);
  t.deepEqual(resolveExpSweep({ targets: ['sims', 'sim/qwen-3b'] }).targets, DEFAULT_SWEEP_TARGETS);
  // an engineer trained on three ALFWorld targets, on the sweep's 18 ALFWorld targets
  const m = resolveExpSweep({ config: 'experiments/configs/sweep.multi.yaml' });
  t.deepEqual(m.engineerTargets, { alfworld: 'lm/alf-s-256-ecrt-xl+lm/alf-s-256-e+lm/alf-m-256-r' });
  t.is(m.targets.length, 18);
  t.deepEqual(resolveExpSweep({ engineerTargets: 'alfworld=lm/alf-s-256-ecrt-xl+lm/alf-s-256-e' }).engineerTargets, { alfworld: 'lm/alf-s-256-ecrt-xl+lm/alf-s-256-e' });
  // the same engineer at three times the budget, on the sweep and on the main table's ALFWorld row
  const m24 = resolveExpSweep({ config: 'experiments/configs/sweep.multi24.yaml' });
  t.deepEqual([m24.engineerTargets, m24.targets], [m.engineerTargets, m.targets]);
  t.is(m24.engineerConfig, 'experiments/configs/train.zoo-x3.yaml');
  const mm = resolveExpMain({ config: 'experiments/configs/main.multi24.yaml' });
  t.deepEqual([mm.engineerTargets, mm.engineerConfig, mm.splits], [m24.engineerTargets, m24.engineerConfig, m24.splits], 'main.multi24 finds sweep.multi24\'s engineer');
  const dirOf = (o: typeof m24 | typeof mm) => engineersDir(o.engineerTargets!, o.seed, o.engineerConfig, { alfworld: o.splits!.alfworld!.train });
  t.is(dirOf(mm), dirOf(m24), 'the same engineers\' folder');
  t.not(dirOf(m24), dirOf(m), 'another budget, another folder');
  t.is(resolveExpMain({}).engineerTargets, undefined, 'by default the engineers train on the experiment\'s target');
  t.is(resolveExpMain({ config: 'experiments/configs/main.lm.yaml' }).target, 'lm/alf-l-256-a');
  // co-evolution on learned targets: a target and its fine-tuned version per env
  const c = resolveExpCoevolve({ config: 'experiments/configs/coevolve.zoo.yaml' });
  t.deepEqual(coevolvePairs(c.target, c.tuned, c.envs), { alfworld: { base: 'lm/alf-s-256-ecrt', tuned: 'lm/alf-s-256-ecrt-da' }, webshop: { base: 'lm/ws-s-256-srt', tuned: 'lm/ws-s-256-srt-da' } });
  t.deepEqual(coevolvePairs({ alfworld: 'lm/alf-s-256-ecrt', webshop: 'lm/ws-s-256-srt' }, undefined, ['alfworld', 'webshop']), coevolvePairs(c.target, c.tuned, c.envs), 'without tuned: each target\'s zoo variant');
  t.is(tunedOf('lm/alf-s-256-a'), 'lm/alf-s-256-a-ft');
  t.throws(() => coevolvePairs({ alfworld: 'lm/alf-s-256-ecrt' }, undefined, ['alfworld', 'webshop']), { message: /target: no target for webshop/ });
});

test('config - an unknown method names its place in the list', async (t) => {
  const e = await t.throwsAsync(runExpMain({ methods: ['vanilla', 'gpt-editor'], inProcess: true, progress: 'silent', out: join(dir, 'x') })) as ExpError;
  t.is(e.code, 'EXP_UNKNOWN_METHOD');
  t.is(e.path, 'methods[1]');
  t.regex(e.message, /prompted-editor/);
});

test('config - the default run folder is named by the config hash, not by where or how it runs', (t) => {
  const a = defaultRunDir('main', resolveExpMain({}) as unknown as Record<string, unknown>);
  const b = defaultRunDir('main', resolveExpMain({ inProcess: true, progress: 'silent', rollout: { replicas: 3 } }) as unknown as Record<string, unknown>);
  const c = defaultRunDir('main', resolveExpMain({ seed: 1 }) as unknown as Record<string, unknown>);
  t.regex(a, /^runs\/main-[0-9a-f]{10}$/);
  t.is(a, b);
  t.not(a, c);
});
