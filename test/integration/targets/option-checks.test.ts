/**
 * Option values are checked before any cluster starts: the real CLI as a child process, for
 * numbers that are not numbers, a --tasks count beyond the split, unknown sim profiles and lm
 * targets, and target settings (unknown, out of range, not for the target's kind or env). Each
 * ends with one typed error line (`hr1: <Class> [<CODE>]: <option>: …`), exit code 2, no stack,
 * and no sign of a cluster (no "hr1 eval: …; <cluster note>" start line).
 */
import test from 'ava';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { hr1 } from '../processes.ts';

const dir = mkdtempSync(join(tmpdir(), 'hr1-option-checks-'));
test.after.always(() => rmSync(dir, { recursive: true, force: true }));
const file = (name: string, text: string) => {
  const p = join(dir, name);
  writeFileSync(p, text);
  return p;
};

const OA = 'openai:http://127.0.0.1:1/v1#m';
const EVAL = ['eval', '--env', 'alfworld', '--target', 'sim/qwen-3b', '--no-cache', '--no-progress'];
const EVAL_OA = ['eval', '--env', 'alfworld', '--target', OA, '--no-cache', '--no-progress', '--tasks', '1'];
/** what a started cluster (or a command past its checks) prints */
const STARTED = /embedded cluster|private nats-server|in-process transport|nats-server not found|connected to NATS|^hr1 (eval|exp \w+|train): |building lm targets|training \(SFT/m;
const STACK = /^\s+at /m;

// a few at a time: each is a node process on a shared machine
let running = 0;
const queue: (() => void)[] = [];
async function run(args: string[]): Promise<{ code: number | null; out: string }> {
  if (running >= 4) await new Promise<void>((r) => queue.push(r));
  running++;
  try {
    const p = hr1(args, { HR1_DEBUG: '' });
    const code = await p.exited;
    return { code, out: p.out() };
  } finally {
    running--;
    queue.shift()?.();
  }
}

const CASES: [string, string[], RegExp][] = [
  // numbers
  ['eval --replicas abc', [...EVAL, '--replicas', 'abc'], /^hr1: CommandError \[BAD_OPTION\]: --replicas: must be a positive integer, got "abc"$/],
  ['eval --env-threads abc', [...EVAL, '--env-threads', 'abc'], /^hr1: CommandError \[BAD_OPTION\]: --env-threads: must be an integer in \[0, 64\], got "abc"$/],
  ['eval --seeds 1,x', [...EVAL, '--seeds', '1,x'], /^hr1: Hr1Error \[BAD_OPTION\]: --seeds: "x" is not a seed or a range/],
  ['eval --tasks beyond the split', [...EVAL, '--tasks', '500'], /^hr1: Hr1Error \[BAD_OPTION\]: --tasks: 500 is more than the 140 tasks of split valid_seen; give at most 140$/],
  ['eval --tasks beyond a named split', ['eval', '--env', 'dbbench', '--target', 'sim/qwen-3b', '--split', 'v0.2/standard', '--tasks', '5000'], /^hr1: Hr1Error \[BAD_OPTION\]: --tasks: 5000 is more than the \d+ tasks of split v0\.2\/standard; give at most \d+$/],
  ['exp main --seed abc', ['exp', 'main', '--seed', 'abc'], /^hr1: CommandError \[BAD_OPTION\]: --seed: must be a non-negative integer, got "abc"$/],
  ['exp crosstask --seeds 1,x', ['exp', 'crosstask', '--seeds', '1,x'], /^hr1: CommandError \[BAD_OPTION\]: --seeds: "x" is not a non-negative integer; write e\.g\. --seeds 0,1,2$/],
  ['train --seed abc', ['train', '--seed', 'abc'], /^hr1: CommandError \[BAD_OPTION\]: --seed: must be a non-negative integer, got "abc"$/],
  ['bench rollout --tasks abc', ['bench', 'rollout', '--tasks', 'abc'], /^hr1: CommandError \[BAD_OPTION\]: --tasks: must be a positive integer, got "abc"$/],
  ['bench envs --seconds abc', ['bench', 'envs', 'alfworld', '--seconds', 'abc'], /^hr1: CommandError \[BAD_OPTION\]: --seconds: must be a number in \[0\.001, 600\], got "abc"$/],
  ['serve --port abc', ['serve', 'echo', '--port', 'abc'], /^hr1: CommandError \[BAD_OPTION\]: --port: must be an integer in \[0, 65535\], got "abc"$/],
  // targets
  ['eval --target sim/nope', ['eval', '--env', 'alfworld', '--target', 'sim/nope'], /^hr1: Hr1Error \[UNKNOWN_SIM_PROFILE\]: no simulated profile "nope"; choose one of qwen-1\.5b, .*phi-32b$/],
  ['eval --target lm/nope', ['eval', '--env', 'alfworld', '--target', 'lm/nope'], /^hr1: .*\[LM_UNKNOWN\]: lm\/nope is not in the zoo; known: alf-xs-192-a/],
  ['exp main --target sim/nope', ['exp', 'main', '--envs', 'dbbench', '--target', 'sim/nope'], /^hr1: ExpError \[EXP_CONFIG\]: main\.target: no simulated profile "nope"; choose one of qwen-1\.5b, .*, got "sim\/nope"$/],
  ['exp sweep --targets with an unknown sim', ['exp', 'sweep', '--envs', 'dbbench', '--targets', 'sim/qwen-3b,sim/nope'], /^hr1: ExpError \[EXP_CONFIG\]: sweep\.targets\[1\]: no simulated profile "nope"/],
  ['train --target sim/nope', ['train', '--env', 'alfworld', '--target', 'sim/nope'], /^hr1: Hr1Error \[UNKNOWN_SIM_PROFILE\]: no simulated profile "nope"/],
  // target settings
  ['eval --temperature on a sim target', [...EVAL, '--tasks', '1', '--temperature', '0.2'], /^hr1: TargetOptionsError \[TARGET_OPTIONS\]: --temperature: does not apply to sim targets: sim\/qwen-3b is a SIMULATED target/],
  ['eval --max-tokens on an lm target', ['eval', '--env', 'alfworld', '--target', 'lm/alf-xs-192-a', '--max-tokens', '5'], /^hr1: TargetOptionsError \[TARGET_OPTIONS\]: --max-tokens: does not apply to lm targets: lm targets take temperature, topP only/],
  ['eval --temperature out of range', [...EVAL_OA, '--temperature', '3'], /^hr1: TargetOptionsError \[TARGET_OPTIONS\]: --temperature: must be a number in \[0, 2\], got 3$/],
  ['eval --temperature not a number', [...EVAL_OA, '--temperature', 'hot'], /^hr1: CommandError \[BAD_OPTION\]: --temperature: must be a number, got "hot"$/],
  ['eval --target-option with an unknown key', [...EVAL_OA, '--target-option', 'temperatur=1'], /^hr1: TargetOptionsError \[TARGET_OPTIONS\]: --target-option temperatur: unknown target setting; accepted: temperature, topP, maxTokens, stop, timeout, retries, concurrency, tools, extraBody, stripReasoning$/],
  ['eval --extra-body not JSON', [...EVAL_OA, '--extra-body', '{nope'], /^hr1: CommandError \[BAD_OPTION\]: --extra-body: not JSON/],
  ['eval --tools on an env without tools', [...EVAL_OA, '--tools'], /^hr1: TargetOptionsError \[TARGET_OPTIONS\]: --tools: alfworld has no function tools \(tools mode is for dbbench\)/],
  ['exp main --temperature on a sim target', ['exp', 'main', '--envs', 'dbbench', '--target', 'sim/qwen-3b', '--temperature', '0.2'], /^hr1: TargetOptionsError \[TARGET_OPTIONS\]: main\.targetOptions\.temperature \(or --temperature\): does not apply to sim targets/],
  ['exp main --target-option with a bad value', ['exp', 'main', '--envs', 'dbbench', '--target-option', 'topP=2'], /^hr1: TargetOptionsError \[TARGET_OPTIONS\]: --target-option topP: must be a number in \(0, 1\], got 2$/],
  ['exp sweep: a config with an unknown setting', ['exp', 'sweep', '--config', file('unknown.yaml', `envs: [dbbench]\ntargets: ["${OA}"]\ntargetOptions:\n  temperatur: 0\n`)], /^hr1: TargetOptionsError \[TARGET_OPTIONS\]: sweep\.targetOptions\.temperatur: unknown target setting; accepted: temperature, .* \(or a target spec of this run/],
  ['exp sweep: a per-target entry with a bad value', ['exp', 'sweep', '--config', file('per-target.yaml', `envs: [dbbench]\ntargets: ["${OA}", sim/qwen-3b]\ntargetOptions:\n  "${OA}":\n    maxTokens: 0\n`)], /^hr1: TargetOptionsError \[TARGET_OPTIONS\]: sweep\.targetOptions\["openai:http:\/\/127\.0\.0\.1:1\/v1#m"\]\.maxTokens: must be a positive integer, got 0$/],
  ['exp coevolve: settings for a target the run does not have', ['exp', 'coevolve', '--config', file('other.yaml', `envs: [dbbench]\ntargetOptions:\n  "openai:http://elsewhere/v1#x": { temperature: 0 }\n`)], /^hr1: TargetOptionsError \[TARGET_OPTIONS\]: coevolve\.targetOptions\["openai:http:\/\/elsewhere\/v1#x"\]: not a target of this run; its targets: sim\/qwen-3b, sim\/qwen-8b$/],
];

for (const [name, args, message] of CASES) {
  test(`option checks - ${name}: one typed error line, before any cluster`, async (t) => {
    const { code, out } = await run(args);
    t.is(code, 2, out);
    const lines = out.split('\n').filter((l) => l.trim() !== '');
    t.is(lines.length, 1, `one line:\n${out}`);
    t.regex(lines[0]!, message);
    t.notRegex(out, STACK, 'no stack');
    t.notRegex(out, STARTED, 'nothing started');
  });
}

test('option checks - eval and exp --help list the target settings under their own heading', async (t) => {
  for (const cmd of [['eval', '--help'], ['exp', 'sweep', '--help']]) {
    const { code, out } = await run(cmd);
    t.is(code, 0, out);
    t.regex(out, /Target settings \(openai:… targets; lm\/ takes --temperature and --top-p only; sim\/ none; part of the episode cache key; docs\/TARGETS\.md\):/);
    for (const f of ['--temperature <x>', '--top-p <x>', '--max-tokens <n>', '--stop <text>', '--target-timeout <dur>', '--target-retries <n>', '--target-concurrency <n>', '--tools', '--extra-body <json>', '--strip-reasoning', '--no-strip-reasoning', '--target-option <key=value>']) t.true(out.includes(f), `${cmd.join(' ')}: ${f}`);
  }
});
