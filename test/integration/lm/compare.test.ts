/**
 * `hr1 zoo compare` (policies/targets/lm/compare.ts): two vendored zoo models on the same first
 * tasks of ALFWorld's evaluation split, paired per task. The figures agree with each model measured
 * on its own, a model against itself differs by exactly 0, a cached figure without per-task
 * outcomes is measured again (not trusted), and the CLI prints JSON or a typed error.
 */
import test from 'ava';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { compareVanilla } from '../../../policies/targets/lm/compare.ts';
import { measureVanilla } from '../../../policies/targets/lm/table.ts';
import { figuresDir } from '../../../policies/targets/lm/vendor.ts';
import { LM_SERVING_VERSION, resolveConfig } from '../../../policies/targets/lm/zoo.ts';

const A = 'alf-s-256-ecrt-xl';
const B = 'alf-s-256-ecrt-xl-da3';
const TASKS = 6;
const root = mkdtempSync(join(tmpdir(), 'hr1-compare-test-'));
test.after.always(() => rmSync(root, { recursive: true, force: true }));

test('B − A is paired per task and agrees with each model measured on its own', async (t) => {
  const dir = join(root, 'a');
  const c = await compareVanilla(A, B, { tasks: TASKS, seeds: 1, dir });
  t.is(c.env, 'alfworld');
  t.is(c.tasks, TASKS);
  t.is(c.episodes, TASKS);
  // each model measured again, fresh, in another folder: the same episodes, so the same figures
  const va = await measureVanilla(A, 'alfworld', { tasks: TASKS, seeds: 1, dir: join(root, 'fresh'), fresh: true });
  const vb = await measureVanilla(B, 'alfworld', { tasks: TASKS, seeds: 1, dir: join(root, 'fresh'), fresh: true });
  t.is(c.success.a, va.success);
  t.is(c.success.b, vb.success);
  t.true(Math.abs(c.success.diff - (vb.success - va.success)) < 1e-12);
  t.is(c.success.above + c.success.below + c.success.same, TASKS);
  const d = vb.perTask!.success.map((x, i) => x - va.perTask!.success[i]!);
  t.is(c.success.above, d.filter((x) => x > 0).length);
  t.is(c.success.below, d.filter((x) => x < 0).length);
  t.true(c.success.diffCi[0] <= c.success.diff && c.success.diff <= c.success.diffCi[1]);
  t.log(`${B} − ${A} on ${TASKS} tasks: ${c.success.diff} [${c.success.diffCi.join(', ')}], above ${c.success.above}, below ${c.success.below}`);
});

test('a model against itself differs by exactly 0 on every task', async (t) => {
  const c = await compareVanilla(A, A, { tasks: TASKS, seeds: 1, dir: join(root, 'a') });
  t.is(c.success.diff, 0);
  t.deepEqual(c.success.diffCi, [0, 0]);
  t.is(c.success.same, TASKS);
});

test('a cached figure without per-task outcomes is measured again, not trusted', async (t) => {
  const dir = join(root, 'stale');
  const c = resolveConfig(A);
  const fd = figuresDir(c, dir);
  const file = join(fd, `vanilla-alfworld-${TASKS}x1-s${LM_SERVING_VERSION}.json`);
  // the shape figures had before per-task outcomes were kept, with a success no model scored
  writeFileSync(file, `${JSON.stringify({ env: 'alfworld', tasks: TASKS, seeds: 1, episodes: TASKS, success: 0.99, successCi: [0.9, 1], score: 0.99, scoreCi: [0.9, 1], noop: 0, invalid: 0, meanSteps: 1 })}\n`);
  const cached = await measureVanilla(A, 'alfworld', { tasks: TASKS, seeds: 1, dir });
  t.is(cached.success, 0.99, 'the zoo table reads the cached aggregate as before');
  const cmp = await compareVanilla(A, A, { tasks: TASKS, seeds: 1, dir });
  t.not(cmp.success.a, 0.99);
  t.is(cmp.vanillaA.perTask!.success.length, TASKS);
  // and the figure is stored again with its per-task outcomes, so the next comparison reads it
  const stored = JSON.parse(readFileSync(file, 'utf8')) as { success: number; perTask?: { success: number[] } };
  t.is(stored.success, cmp.success.a);
  t.is(stored.perTask?.success.length, TASKS);
});

const exec = promisify(execFile);
const cli = (args: string[]) => exec(process.execPath, ['bin/hr1.js', ...args], { env: { ...process.env, HR1_PROGRESS: 'off' }, maxBuffer: 1 << 22 }).then(
  (r) => ({ code: 0, ...r }),
  (e: { code: number; stdout: string; stderr: string }) => e,
);

test('the CLI prints one JSON object, and a pair of models of different envs is a typed error', async (t) => {
  const ok = await cli(['zoo', 'compare', `lm/${A}`, A, '--tasks', '3', '--seeds', '1', '--json']);
  t.is(ok.code, 0, ok.stderr);
  const j = JSON.parse(ok.stdout) as { env: string; success: { diff: number; same: number } };
  t.is(j.env, 'alfworld');
  t.is(j.success.diff, 0);
  t.is(j.success.same, 3);
  const bad = await cli(['zoo', 'compare', A, 'ws-s-256-srt-hi']);
  t.is(bad.code, 2);
  t.regex(bad.stderr, /LM_BAD_OPTION.*share no env/);
  t.notRegex(bad.stderr, /\n\s+at /, 'no stack trace');
  const env = await cli(['zoo', 'compare', A, B, '--env', 'webshop']);
  t.is(env.code, 2);
  t.regex(env.stderr, /does not play webshop/);
});
