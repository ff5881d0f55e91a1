/**
 * Bad inputs to the real CLI: each ends in the one error handler with `hr1: <message naming the
 * problem>`, a non-zero exit and no stack trace (stacks only with HR1_DEBUG=1). Every case fails
 * before any real work starts; they run in parallel.
 */
import test from 'ava';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { formatCliError } from '../../experiments/cli/errors.ts';
import { Hr1Error } from '../../cluster/errors.ts';
import { hr1 } from './processes.ts';

const STACK = /^\s+at /m;
const dir = mkdtempSync(join(tmpdir(), 'hr1-cli-errors-'));
const f = (name: string, text: string) => {
  const p = join(dir, name);
  writeFileSync(p, text);
  return p;
};
const notJson = f('not-json.json', 'this is not json\n');
const badPatch = f('bad-patch.json', JSON.stringify({ rules: [{ hook: 'nope' }] }));
const badMain = f('bad-main.yaml', 'envs: [dbbench]\ntest:\n  tasks: -3\n');
const badTrain = f('bad-train.yaml', 'env: alfworld\ngrpo: { iterations: -2 }\n');
const throwingModule = f('throws.mjs', "throw new Error('boom at import');\n");

test.after.always(() => rmSync(dir, { recursive: true, force: true }));

interface Case {
  name: string;
  args: string[];
  /** a specific piece of the message */
  message: RegExp;
  /** whole run, in ms (generous: the machine is shared) */
  withinMs?: number;
  /** must not appear in the output */
  not?: RegExp;
  env?: NodeJS.ProcessEnv;
}

const EVAL = ['eval', '--env', 'alfworld', '--target', 'sim/qwen-3b', '--tasks', '1', '--no-cache', '--no-progress'];

const CASES: Case[] = [
  { name: 'patch show: a file that is not JSON', args: ['patch', 'show', notJson], message: /^hr1: .*\[HARNESS_BAD_JSON\]: .*not-json\.json is not JSON/m },
  { name: 'patch show: JSON that is not a patch', args: ['patch', 'show', badPatch], message: /bad-patch\.json is not a valid patch; fix these fields[\s\S]*rules\[0\]\.hook: hook is one of/ },
  { name: 'patch check: a missing file', args: ['patch', 'check', join(dir, 'missing.json')], message: /cannot read .*missing\.json.*pass the path of a patch JSON file/ },
  { name: 'envs replay: an unknown game', args: ['envs', 'replay', 'alfworld', '--game', 'nope', '--actions', '/dev/null'], message: /^hr1: .*\[ALFWORLD_UNKNOWN_GAME\]: no game "nope"/m },
  { name: 'envs replay: an env without replay', args: ['envs', 'replay', 'dbbench', '--game', 'x', '--actions', '/dev/null'], message: /^hr1: CommandError \[BAD_ENV\]: replay is available for alfworld only, got "dbbench"/m },
  { name: 'envs verify: a data dir that does not exist', args: ['envs', 'verify', 'alfworld', '--data', '/nonexistent'], message: /\[ALFWORLD_BAD_DATA\]: data directory does not exist.*\/nonexistent/ },
  { name: 'eval: an unknown sim profile', args: ['eval', '--env', 'alfworld', '--target', 'sim/nope'], message: /\[UNKNOWN_SIM_PROFILE\]: no simulated profile "nope"; choose one of .*qwen-3b/, not: /embedded cluster|hr1 eval: alfworld/ },
  { name: 'eval: an lm/ target the zoo does not know (fails fast, builds nothing)', args: ['eval', '--env', 'alfworld', '--target', 'lm/nope'], message: /\[LM_UNKNOWN\]: lm\/nope is not in the zoo; known: /, not: /building|embedded cluster/ },
  { name: 'eval: a negative --tasks', args: [...EVAL.slice(0, 5), '--tasks', '-3'], message: /--tasks: "-3" is not a count, an index or a range; write e\.g\./ },
  { name: 'eval: a bad --seeds', args: [...EVAL, '--seeds', '1,x'], message: /--seeds: "x" is not a seed or a range; write e\.g\. --seeds 1,2,3/ },
  { name: 'eval: an unknown --env', args: ['eval', '--env', 'nope', '--target', 'sim/qwen-3b'], message: /unknown env "nope"; choose one of alfworld, dbbench, webshop/ },
  { name: 'eval: a --cache-path that cannot be opened (after the embedded cluster started)', args: [...EVAL.filter((a) => a !== '--no-cache'), '--cache-path', join(notJson, 'x.sqlite')], message: /--cache-path .*cannot open the episode cache there .*pass a writable file path, or --no-cache/ },
  { name: 'exp main: a config file that does not exist', args: ['exp', 'main', '--config', '/nonexistent.yaml'], message: /\[EXP_CONFIG_FILE\]: config \/nonexistent\.yaml: cannot read it/ },
  { name: 'exp main: a config with a bad value', args: ['exp', 'main', '--config', badMain], message: /\[EXP_CONFIG\]: main\.test\.tasks: must be a positive integer, got -3/ },
  { name: 'exp main: an unknown method', args: ['exp', 'main', '--envs', 'dbbench', '--methods', 'vanilla,nope'], message: /methods\[1\]: unknown method "nope"; choose one of .*engineer-grpo/ },
  { name: 'train: a config with a bad field', args: ['train', '--config', badTrain], message: /\[CONFIG\]: config\.grpo\.iterations: Too small/ },
  { name: 'node: a --module that throws while it is imported', args: ['node', '--address', 'nats://127.0.0.1:1', '--module', throwingModule], message: /\[BAD_MODULE\]: --module .*throws\.mjs: cannot load it \(boom at import\)/ },
];

interface Ran {
  c: Case;
  code: number | null;
  out: string;
  ms: number;
}

async function runAll(cases: Case[]): Promise<Ran[]> {
  return Promise.all(
    cases.map(async (c) => {
      const t0 = Date.now();
      const p = hr1(c.args, { HR1_DEBUG: '', ...c.env });
      const code = await p.exited;
      return { c, code, out: p.out(), ms: Date.now() - t0 };
    }),
  );
}

/** Whether something still listens on the port (the embedded nats-server of a run that failed). */
function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect({ host: '127.0.0.1', port });
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });
}

const REFUSED = /\[CONNECTION_REFUSED\]: cannot connect to NATS at nats:\/\/127\.0\.0\.1:1 .*is nats-server running there\?/;
/** Run on their own after the others, so their time says how long the connection attempt takes. */
const UNREACHABLE: Case[] = [
  { name: 'eval: an unreachable --address (fails within seconds)', args: [...EVAL, '--address', 'nats://127.0.0.1:1'], message: REFUSED, withinMs: 30_000 },
  // the engineers hr1 exp main trains first run on the experiment's cluster: the bad address fails before any training
  { name: 'exp main: an unreachable --address, before training engineers on it', args: ['exp', 'main', '--envs', 'dbbench', '--address', 'nats://127.0.0.1:1'], message: REFUSED, withinMs: 30_000, not: /training \(SFT/ },
];

test('cli errors - every bad input: hr1: <the problem>, a non-zero exit, no stack', async (t) => {
  t.true(CASES.length + UNREACHABLE.length >= 12);
  const ran = [...(await runAll(CASES)), ...(await runAll(UNREACHABLE))];
  for (const { c, code, out, ms } of ran) {
    t.log(`${c.name}: exit ${code}, ${ms} ms`);
    t.truthy(code, `${c.name}: exit code ${code}\n${out}`);
    t.regex(out, c.message, c.name);
    t.notRegex(out, STACK, `${c.name}: printed a stack\n${out}`);
    if (c.not) t.notRegex(out, c.not, c.name);
    if (c.withinMs) t.true(ms < c.withinMs, `${c.name}: took ${ms} ms`);
  }
  // the run that failed after its embedded cluster started left no nats-server behind
  const cacheRun = ran.find((r) => r.c.args.includes('--cache-path'))!;
  const port = /private nats-server at nats:\/\/127\.0\.0\.1:(\d+)/.exec(cacheRun.out)?.[1];
  if (port) t.false(await listening(Number(port)), `nats-server on port ${port} outlived the command`);
  else t.regex(cacheRun.out, /in-process/, 'no embedded nats-server (nats-server not installed)');
});

test('cli errors - HR1_DEBUG=1 (or --debug) adds the stack', async (t) => {
  const [a, b] = await runAll([
    { name: 'HR1_DEBUG=1', args: ['patch', 'show', notJson], message: /is not JSON/, env: { HR1_DEBUG: '1' } },
    { name: '--debug', args: ['patch', 'show', notJson, '--debug'], message: /is not JSON/ },
  ]);
  for (const r of [a!, b!]) {
    t.is(r.code, 2, r.out);
    t.regex(r.out, /^hr1: .*is not JSON/m);
    t.regex(r.out, STACK, `${r.c.name}: no stack\n${r.out}`);
  }
});

test('cli errors - the handler: project errors by class or by code, anything else as unexpected, never a stack unless asked', (t) => {
  const project = formatCliError(new Hr1Error('SOME_CODE', 'the problem; the fix'), false);
  t.deepEqual(project, { text: 'hr1: Hr1Error [SOME_CODE]: the problem; the fix\n', exitCode: 2 });
  class ForeignError extends Error {
    code = 'FOREIGN_BAD';
    override name = 'ForeignError';
  }
  t.is(formatCliError(new ForeignError('duck-typed'), false).text, 'hr1: ForeignError [FOREIGN_BAD]: duck-typed\n');
  const plain = formatCliError(new TypeError('x is undefined'), false);
  t.is(plain.text, 'hr1: x is undefined (unexpected error: rerun with HR1_DEBUG=1 for the stack)\n');
  t.is(plain.exitCode, 1);
  const sys = Object.assign(new Error("ENOENT: no such file or directory, open 'x'"), { code: 'ENOENT', syscall: 'open' });
  t.regex(formatCliError(sys, false).text, /^hr1: ENOENT: .* \(unexpected error: rerun with HR1_DEBUG=1 for the stack\)\n$/);
  t.is(formatCliError('a string', false).text, 'hr1: a string (unexpected error: rerun with HR1_DEBUG=1 for the stack)\n');
  t.regex(formatCliError(new TypeError('x is undefined'), true).text, STACK);
  t.notRegex(formatCliError(new Hr1Error('C', 'm', { cause: new Error('inner') }), false).text, STACK);
});
