/**
 * The held-out synthetic probe of DBBench targets (policies/targets/lm/dbbench/probe.ts): its
 * tasks are deterministic, drawn on renamed tables only, and it counts what a model wins through
 * the real env (the teacher wins every task; a model that answers without querying wins none).
 */
import test from 'ava';
import type { Model } from '../../../harness/index.ts';
import { probeSynthetic, probeTasks } from '../../../policies/targets/lm/dbbench/probe.ts';
import { synthTasks, trainingTables } from '../../../policies/targets/lm/dbbench/synth.ts';
import { teacherModel } from '../../../policies/targets/lm/dbbench/teacher.ts';
import { Rng } from '../../../cluster/rng.ts';

test('dbbench probe - tasks are deterministic, on renamed tables, and not a build\'s tasks', async (t) => {
  const a = await probeTasks({ tasks: 40 });
  const b = await probeTasks({ tasks: 40 });
  t.deepEqual(a.map((x) => x.id), b.map((x) => x.id));
  const names = new Set(trainingTables().map((x) => x.name));
  t.true(a.every((x) => !names.has(x.tableName)), 'every probe table is renamed');
  // a build's teacher episodes (collectDbbench draws `lm-dbsynth:<seed>`) are other tasks
  const build = new Set((await synthTasks(new Rng('lm-dbsynth:1'), 200, { rename: 0.7 })).map((x) => x.id.split('-').pop()));
  t.false(a.some((x) => build.has(x.id.split('-').pop())));
  const wide = await probeTasks({ tasks: 40, phrasing: 'wide' });
  t.notDeepEqual(wide.map((x) => x.description), a.map((x) => x.description));
});

test('dbbench probe - the teacher wins every task; a model that answers without a query wins none', async (t) => {
  const teacher = await probeSynthetic((task) => teacherModel(task, { noise: 0 }), { tasks: 24 });
  t.is(teacher.tasks, 24);
  t.is(teacher.won, 24);
  t.is(teacher.reads.tasks + teacher.writes.tasks, 24);
  t.is(Object.values(teacher.byType).reduce((s, x) => s + x.won, 0), 24);
  t.is(teacher.invalid, 0);
  const blind: Model = { name: 'blind', decide: async () => 'Action: Answer\nFinal Answer: []' };
  const r = await probeSynthetic(blind, { tasks: 24 });
  t.is(r.won, 0);
  t.deepEqual(r.successCi, [0, 0]);
  await t.throwsAsync(probeTasks({ tasks: 0 }), { message: /tasks must be an integer ≥ 1/ });
});
