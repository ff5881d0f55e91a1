import test from 'ava';
import '../fixtures/envs/lock/index.ts';
import { init } from '../../cluster/init.ts';
import { rollout, summarizeRecords } from '../../drivers/index.ts';
import { ENV_NAMES, envDescriptor, envNames, listTasks, registerEnv } from '../../envs/registry.ts';
import { canonicalJson } from '../../harness/index.ts';
import { extractPacket, formatPacket, teacherPropose } from '../../policies/engineer/index.ts';
import { lock } from '../fixtures/envs/lock/env.ts';
import { hr1 } from './processes.ts';

test('registry - every shipped env has tasks in its train, held-out and test splits; train is disjoint from them', (t) => {
  t.deepEqual([...ENV_NAMES], ['alfworld', 'dbbench', 'webshop']);
  for (const env of ENV_NAMES) {
    const d = envDescriptor(env);
    t.is(d.name, env);
    const train = new Set(listTasks(env, d.splits.train));
    t.true(train.size > 0, `${env} train`);
    for (const s of [d.splits.heldout, ...d.splits.test]) {
      const ids = listTasks(env, s);
      t.true(ids.length > 0, `${env} ${s}`);
      t.false(ids.some((id) => train.has(id)), `${env}: ${s} shares tasks with ${d.splits.train}`);
      t.true(d.splits.names.includes(s));
    }
    // the descriptor's step limit is its sessions' (one definition, not a copy)
    const session = d.session(listTasks(env, d.splits.heldout)[0]!, {}).open(0);
    t.is(d.maxSteps({}), session.maxSteps, `${env} maxSteps`);
  }
});

test('registry - an unknown env names the known ones; a taken name is refused', (t) => {
  const e = t.throws(() => envDescriptor('minecraft')) as Error & { code: string };
  t.is(e.code, 'UNKNOWN_ENV');
  t.regex(e.message, /unknown env "minecraft"; choose one of alfworld, dbbench, webshop, lock/);
  t.throws(() => registerEnv({ ...lock }), { message: /env "lock" is already registered/ });
  t.notThrows(() => registerEnv(lock), 'registering the same descriptor again is a no-op');
});

test('registry - a fake fourth env from the test tree runs through rollout, packets, a patch and hr1 eval', async (t) => {
  t.true(envNames().includes('lock'));
  const episodes = listTasks('lock', 'train').slice(0, 12).map((taskId) => ({ taskId, seed: 0 }));
  const rt = await init({ inProcess: true });
  let vanillaTest: number;
  try {
    const a = await rollout(rt.cluster, { env: 'lock', target: 'sim/llama-3b', episodes }, { cache: null });
    const b = await rollout(rt.cluster, { env: 'lock', target: 'sim/llama-3b', episodes }, { cache: null });
    t.is(canonicalJson(a.records), canonicalJson(b.records), 'deterministic');
    const s = summarizeRecords(a.records);
    t.true(s.success > 0 && s.success < 1, `some episodes fail and some win (${s.success})`);
    t.true(a.records.every((r) => r.env === 'lock'));
    const packet = extractPacket(a.records);
    t.is(packet.env, 'lock');
    t.true(packet.episodes.length > 0);
    t.regex(formatPacket(packet), /env: lock/);
    const [proposal] = teacherPropose(packet, { k: 1, seed: 0 });
    const patched = await rollout(rt.cluster, { env: 'lock', target: 'sim/llama-3b', episodes, patch: proposal!.patch }, { cache: null });
    t.not(canonicalJson(patched.records), canonicalJson(a.records), 'the patch changed the episodes');
    const effects = patched.records.flatMap((r) => r.hooks).reduce((n, h) => n + h.counters.hinted + h.counters.blocked + h.counters.rewrote + h.counters.forced, 0);
    t.true(effects > 0, 'its hooks ran and acted');
    t.is(a.records.flatMap((r) => r.hooks).length, 0, 'the vanilla harness has no hook entries');
    const test6 = listTasks('lock', 'test').slice(0, 6).map((taskId) => ({ taskId, seed: 1 }));
    vanillaTest = summarizeRecords((await rollout(rt.cluster, { env: 'lock', target: 'sim/llama-3b', episodes: test6 }, { cache: null })).records).success;
  } finally {
    await rt.shutdown();
  }
  // the CLI sees the env once the module is loaded, and gives the in-process figures
  const p = hr1(['eval', '--module', 'test/fixtures/envs/lock/index.ts', '--env', 'lock', '--target', 'sim/llama-3b', '--tasks', '6', '--seeds', '1', '--json', '--no-cache', '--no-progress']);
  t.is(await p.exited, 0, p.out());
  const out = JSON.parse(p.out().slice(p.out().indexOf('{'))) as { success: number; n?: number; episodes?: number };
  t.is(out.success, vanillaTest);
});

test('registry - hr1 bench envs\' registry row opens and closes episodes of every env, the fake one too', async (t) => {
  const { benchRegistryOpens } = await import('../../experiments/commands/envs.ts');
  for (const env of [...ENV_NAMES, 'lock']) {
    const rate = await benchRegistryOpens(env, 0.05);
    t.true(Number.isFinite(rate) && rate > 0, `${env}: ${rate} opens/s`);
  }
  await t.throwsAsync(benchRegistryOpens('nope', 0.05), { code: 'UNKNOWN_ENV' } as never);
});
