/**
 * The engineer methods are built in: looked up from code as runExpMain does (no CLI import, no
 * register call), `engineer-sft` and `engineer-grpo` are the real ones, not placeholders.
 */
import test from 'ava';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ENGINEER_MISSING, getMethod, methodNames, registerMethod, resetMethods, resolveExpMain } from '../../../experiments/exp/index.ts';
import { BEST_FIXED_MISSING } from '../../../experiments/runner/engineer-methods.ts';
import { methodAvailable, builtinMethods, type MethodContext } from '../../../experiments/runner/methods.ts';
import { methodOptionsOf, methodsMeta } from '../../../experiments/exp/common.ts';

test('methods - engineer-sft and engineer-grpo are in the registry with their real propose', async (t) => {
  t.true(methodNames().includes('engineer-sft'));
  t.true(methodNames().includes('engineer-grpo'));
  const dir = mkdtempSync(join(tmpdir(), 'hr1-eng-'));
  try {
    for (const [name, file] of [['engineer-sft', 'engineer-sft.onnx'], ['engineer-grpo', 'engineer.onnx']] as const) {
      const m = getMethod(name);
      t.is(m.kind, 'engineer');
      t.is(m.version, 'builtin-1', `${name} is the built-in engineer, not the placeholder`);
      // without an engineer path the row says how to get one; with one it runs
      t.is(methodAvailable(m, { editor: { k: 4, select: 'first' } }), ENGINEER_MISSING);
      t.true(methodAvailable(m, { engineer: dir, editor: { k: 4, select: 'first' } }));
      // the real propose looks for the model file (the placeholder would refuse with ENGINEER_MISSING)
      const ctx = { env: 'alfworld', options: { engineer: dir, editor: { k: 4, select: 'first' } } } as unknown as MethodContext;
      const err = await t.throwsAsync(m.propose(ctx), { code: 'EXP_METHOD_FAILED' } as never);
      t.true(err!.message.includes(`no ${file} for alfworld under ${dir}`), err!.message);
      t.false(err!.message.includes(ENGINEER_MISSING));
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('methods - the sampled engineer rows sample as the run\'s GRPO did, and say so when they cannot', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'hr1-eng-'));
  try {
    const ctx = { env: 'alfworld', packet: { env: 'alfworld', episodes: [] }, seed: 0, options: { engineer: dir, editor: { k: 4, select: 'first' } } } as unknown as MethodContext;
    const m = getMethod('engineer-grpo-sampled');
    t.is(m.version, 'builtin-sampled-1');
    // a run without its config.json: how it sampled is unknown
    writeFileSync(join(dir, 'engineer.onnx'), '');
    await t.throwsAsync(m.propose(ctx), { code: 'EXP_METHOD_FAILED', message: /engineer-grpo-sampled: no readable config\.json with grpo\.temperature and grpo\.topP for alfworld/ } as never);
    // an hf: engineer decodes greedily only
    rmSync(join(dir, 'engineer.onnx'));
    writeFileSync(join(dir, 'engineer.safetensors'), '');
    writeFileSync(join(dir, 'config.json'), JSON.stringify({ engineer: 'hf:/nowhere', grpo: { temperature: 1, topP: 1 } }));
    await t.throwsAsync(m.propose(ctx), { code: 'EXP_METHOD_FAILED', message: /decodes greedily only; use engineer-grpo$/ } as never);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('methods - as runExpMain resolves them: --engineer makes the engineer rows available', (t) => {
  const o = resolveExpMain({ engineer: '/some/run', envs: ['dbbench'] });
  const { meta } = methodsMeta(o.methods, o);
  t.deepEqual(meta.filter((m) => m.kind === 'engineer').map((m) => [m.name, m.available]), [['best-fixed-patch', true], ['engineer-sft', true], ['engineer-grpo', true]]);
  t.is(methodOptionsOf(o).engineer, '/some/run');
  const without = methodsMeta(resolveExpMain({ envs: ['dbbench'] }).methods, resolveExpMain({ envs: ['dbbench'] })).meta;
  t.true(without.filter((m) => m.kind === 'engineer').every((m) => m.available === (m.name.startsWith('best-fixed') ? BEST_FIXED_MISSING : ENGINEER_MISSING)));
});

test.serial('methods - resetMethods puts the built-in engineers back after a replacement', (t) => {
  registerMethod({ name: 'engineer-grpo', kind: 'engineer', propose: async () => null });
  try {
    t.is(getMethod('engineer-grpo').version, undefined);
  } finally {
    resetMethods();
  }
  t.is(getMethod('engineer-grpo').version, 'builtin-1');
  t.deepEqual(builtinMethods().map((m) => m.name), ['vanilla', 'react', 'self-refine', 'prompted-editor', 'llm-editor', 'best-fixed-patch', 'best-fixed-transfer', 'engineer-sft', 'engineer-grpo', 'engineer-sft-sampled', 'engineer-grpo-sampled', 'engineer-grpo-best-of-k', 'engineer-grpo-transfer']);
});
