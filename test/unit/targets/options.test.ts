/**
 * Target settings (policies/targets/options.ts): the schema, the kind check, the canonical form
 * (the episode cache key), per-target maps from configs, reasoning stripping, and the CLI flags
 * that produce them (experiments/cli/options.ts).
 */
import test from 'ava';
import { parse as parseYaml } from 'yaml';
import { Command } from 'commander';
import { Hr1Error } from '../../../cluster/errors.ts';
import {
  RUNTIME_TARGET_OPTIONS,
  TARGET_OPTION_KEYS,
  TARGET_SETTINGS,
  TargetOptionsError,
  checkTargetOptionValues,
  resolveTargetOptions,
  settingsFor,
  targetOptionsByTarget,
} from '../../../policies/targets/options.ts';
import { stripReasoningText } from '../../../policies/targets/openai.ts';
import { addTargetOptions, parseIntListOpt, parseIntOpt, parseNumberOpt, parsePositiveInt, targetFlagsOf, unescapeStop } from '../../../experiments/cli/options.ts';

const OA = 'openai:http://127.0.0.1:8000/v1#Qwen/Qwen3-8B';
const OB = 'openai:http://127.0.0.1:8001/v1#m';

function err(t: { throws: (fn: () => unknown, o?: object) => unknown }, fn: () => unknown): TargetOptionsError {
  return t.throws(fn, { instanceOf: TargetOptionsError }) as TargetOptionsError;
}

test('target options - every setting in its canonical form: stop as a list, timeout in ms, defaults dropped', (t) => {
  t.deepEqual(
    resolveTargetOptions(OA, { temperature: 0.2, topP: 0.9, maxTokens: 256, stop: '\n', timeout: '30s', retries: 2, concurrency: 16, tools: true, extraBody: { chat_template_kwargs: { enable_thinking: false } }, stripReasoning: false }, { envs: ['dbbench'] }),
    { temperature: 0.2, topP: 0.9, maxTokens: 256, stop: ['\n'], timeout: 30_000, retries: 2, concurrency: 16, tools: true, extraBody: { chat_template_kwargs: { enable_thinking: false } }, stripReasoning: false },
  );
  // the defaults given explicitly are the same key as nothing
  t.deepEqual(resolveTargetOptions(OA, { timeout: 60_000, retries: 4, concurrency: 8, tools: false, extraBody: {}, stripReasoning: true }), {});
  t.deepEqual(resolveTargetOptions(OA, undefined), {});
  t.deepEqual(resolveTargetOptions(OA, { temperature: 0, stop: ['a', 'b'], timeout: 250 }), { temperature: 0, stop: ['a', 'b'], timeout: 250 });
  t.is(TARGET_OPTION_KEYS.length, TARGET_SETTINGS.length);
  t.deepEqual([...RUNTIME_TARGET_OPTIONS], ['timeout', 'retries', 'concurrency']);
});

test('target options - an unknown key is refused naming it and every accepted key (with a guess for snake_case)', (t) => {
  const e = err(t, () => resolveTargetOptions(OA, { temperatur: 1 }));
  t.is(e.code, 'TARGET_OPTIONS');
  t.true(e instanceof Hr1Error);
  t.is(e.key, 'temperatur');
  t.regex(e.message, /^targetOptions\.temperatur: unknown target setting; accepted: temperature, topP, maxTokens, stop, timeout, retries, concurrency, tools, extraBody, stripReasoning$/);
  t.deepEqual([...e.accepted], [...TARGET_OPTION_KEYS]);
  t.regex(err(t, () => resolveTargetOptions(OA, { max_tokens: 5 })).message, /targetOptions\.max_tokens: unknown target setting \(did you mean maxTokens\?\)/);
});

test('target options - a bad value names the setting, its rule and the value', (t) => {
  const cases: [Record<string, unknown>, RegExp][] = [
    [{ temperature: 3 }, /^targetOptions\.temperature: must be a number in \[0, 2\], got 3$/],
    [{ temperature: 'hot' }, /temperature: must be a number in \[0, 2\], got "hot"/],
    [{ topP: 0 }, /topP: must be a number in \(0, 1\], got 0/],
    [{ maxTokens: 2.5 }, /maxTokens: must be a positive integer, got 2\.5/],
    [{ stop: '' }, /stop: must be a non-empty string or a list/],
    [{ stop: [] }, /stop: must be a non-empty string or a list/],
    [{ timeout: 0 }, /timeout: must be a positive duration/],
    [{ timeout: 'soon' }, /timeout: must be a positive duration: .*got "soon"/],
    [{ retries: -1 }, /retries: must be an integer in 0\.\.100, got -1/],
    [{ concurrency: 0 }, /concurrency: must be an integer in 1\.\.4096/],
    [{ tools: 'yes' }, /tools: must be true or false, got "yes"/],
    [{ extraBody: [1] }, /extraBody: must be a JSON object, got \[1\]/],
    [{ extraBody: { model: 'x' } }, /extraBody: may not set "model" \(the model comes from the target spec/],
    [{ extraBody: { temperature: 1 } }, /extraBody: may not set "temperature" \(use the temperature setting\)/],
    [{ stripReasoning: 1 }, /stripReasoning: must be true or false, got 1/],
  ];
  for (const [input, re] of cases) t.regex(err(t, () => resolveTargetOptions(OA, input)).message, re, JSON.stringify(input));
  t.regex(err(t, () => resolveTargetOptions(OA, 'temperature=1')).message, /targetOptions: must be a map of settings/);
});

test('target options - settings that do not apply to the target kind are an error naming the kind', (t) => {
  const sim = err(t, () => resolveTargetOptions('sim/qwen-3b', { temperature: 0.2 }));
  t.regex(sim.message, /^targetOptions\.temperature: does not apply to sim targets: sim\/qwen-3b is a SIMULATED target: .* takes no settings; drop it$/);
  t.is(sim.data?.kind, 'sim');
  t.deepEqual(settingsFor('sim'), []);
  // the lm backend honours temperature and topP (lmModel's options), nothing else
  t.deepEqual(settingsFor('lm'), ['temperature', 'topP']);
  t.deepEqual(resolveTargetOptions('lm/alf-xs-192-a', { temperature: 0, topP: 0.8 }), { temperature: 0, topP: 0.8 });
  t.regex(err(t, () => resolveTargetOptions('lm/alf-xs-192-a', { maxTokens: 5 })).message, /maxTokens: does not apply to lm targets: lm targets take temperature, topP only/);
  t.deepEqual(resolveTargetOptions('sim/qwen-3b', {}), {});
  // tools mode needs an env with function tools
  t.regex(err(t, () => resolveTargetOptions(OA, { tools: true }, { envs: ['alfworld', 'dbbench'] })).message, /tools: alfworld has no function tools \(tools mode is for dbbench\)/);
  // the value check alone, for flags whose targets are not known yet
  t.deepEqual(checkTargetOptionValues({ temperature: 0.5 }), { temperature: 0.5 });
  t.throws(() => checkTargetOptionValues({ nope: 1 }), { instanceOf: TargetOptionsError });
});

test('target options - a config map: top-level settings for every target, an entry per target spec over them', (t) => {
  // a YAML key may be an unquoted openai spec (the # after a non-space is no comment)
  const yaml = parseYaml(`targetOptions:\n  temperature: 0\n  maxTokens: 128\n  ${OB}:\n    temperature: 0.7\n    stop: "\\n"\n`) as { targetOptions: unknown };
  const m = targetOptionsByTarget([OA, OB], yaml.targetOptions, { path: 'sweep.targetOptions' });
  t.deepEqual(m.get(OA), { temperature: 0, maxTokens: 128 });
  t.deepEqual(m.get(OB), { temperature: 0.7, maxTokens: 128, stop: ['\n'] });
  // a target without settings is not in the map
  t.false(targetOptionsByTarget([OA, 'sim/qwen-3b'], { [OA]: { temperature: 0 } }).has('sim/qwen-3b'));
  t.is(targetOptionsByTarget([OA], undefined).size, 0);
  // errors name the path of the bad entry
  t.regex(err(t, () => targetOptionsByTarget([OA, 'sim/qwen-3b'], { temperature: 0 }, { path: 'sweep.targetOptions' })).message, /^sweep\.targetOptions\.temperature: does not apply to sim targets/);
  t.regex(err(t, () => targetOptionsByTarget([OA, OB], { [OB]: { topP: 2 } }, { path: 'sweep.targetOptions' })).message, /^sweep\.targetOptions\["openai:http:\/\/127\.0\.0\.1:8001\/v1#m"\]\.topP: must be a number in \(0, 1\]/);
  t.regex(err(t, () => targetOptionsByTarget([OA], { 'openai:http://other/v1#x': { temperature: 0 } })).message, /targetOptions\["openai:http:\/\/other\/v1#x"\]: not a target of this run; its targets: openai:/);
  t.regex(err(t, () => targetOptionsByTarget([OA], { nope: 1 })).message, /targetOptions\.nope: unknown target setting; accepted: .*stripReasoning \(or a target spec of this run/);
  // hr1 exp: a top-level setting may have come from its flag, so both are named
  t.regex(err(t, () => targetOptionsByTarget(['sim/qwen-3b'], { temperature: 0 }, { flags: true, path: 'main.targetOptions' })).message, /^main\.targetOptions\.temperature \(or --temperature\): does not apply to sim targets/);
});

test('target options - reasoning blocks are stripped from the answer text', (t) => {
  t.is(stripReasoningText('<think>check the desk\nAction: go to desk 1</think>\nAction: Answer\nFinal Answer: ["1"]'), 'Action: Answer\nFinal Answer: ["1"]');
  t.is(stripReasoningText('a<think>x</think>b<think>y</think>c'), 'abc');
  // the template opened the block in the prompt: everything up to </think> is reasoning
  t.is(stripReasoningText('I should look first.\n</think>\n\ngo to desk 1'), 'go to desk 1');
  // cut off while thinking: nothing of it is an action
  t.is(stripReasoningText('<think>still thinking about'), '');
  t.is(stripReasoningText('go to desk 1\n'), 'go to desk 1\n', 'text without reasoning is left as it is');
});

test('cli options - numbers are checked by the parsers with a typed error naming the option, never NaN', (t) => {
  t.is(parsePositiveInt('--replicas')('4'), 4);
  t.throws(() => parsePositiveInt('--replicas')('abc'), { message: '--replicas: must be a positive integer, got "abc"' });
  t.throws(() => parsePositiveInt('--replicas')('0'), { message: /must be a positive integer/ });
  t.throws(() => parsePositiveInt('--replicas')('2.5'), { message: /must be a positive integer/ });
  t.is(parseIntOpt('--env-threads', { min: 0, max: 64 })('0'), 0);
  t.throws(() => parseIntOpt('--env-threads', { min: 0, max: 64 })('65'), { message: '--env-threads: must be an integer in [0, 64], got "65"' });
  t.throws(() => parseIntOpt('--seed', { min: 0 })(''), { message: /--seed: must be a non-negative integer/ });
  t.is(parseNumberOpt('--temperature')('0.2'), 0.2);
  t.throws(() => parseNumberOpt('--temperature')('hot'), { message: '--temperature: must be a number, got "hot"' });
  t.deepEqual(parseIntListOpt('--seeds', { min: 0 })('0, 1,2'), [0, 1, 2]);
  t.throws(() => parseIntListOpt('--seeds', { min: 0 })('1,x'), { message: /--seeds: "x" is not a non-negative integer; write e\.g\. --seeds 0,1,2/ });
  const e = t.throws(() => parseIntOpt('--port')('x'));
  t.true(e instanceof Hr1Error && e.code === 'BAD_OPTION');
});

test('cli options - the target flags give raw settings named by their flag; --target-option takes any key; twice is an error', (t) => {
  const cmd = addTargetOptions(new Command().exitOverride());
  cmd.parse(['--temperature', '0.2', '--top-p', '0.9', '--max-tokens', '256', '--stop', '\\n', '--stop', 'END', '--target-timeout', '30s', '--target-retries', '2', '--target-concurrency', '8', '--tools', '--extra-body', '{"chat_template_kwargs":{"enable_thinking":false}}', '--no-strip-reasoning'], { from: 'user' });
  const { raw, name } = targetFlagsOf(cmd.opts());
  t.deepEqual(raw, { temperature: 0.2, topP: 0.9, maxTokens: 256, stop: ['\n', 'END'], timeout: '30s', retries: 2, concurrency: 8, tools: true, extraBody: { chat_template_kwargs: { enable_thinking: false } }, stripReasoning: false });
  t.is(name('topP'), '--top-p');
  t.is(name('timeout'), '--target-timeout');
  t.deepEqual(resolveTargetOptions(OA, raw, { name, envs: ['dbbench'] }), { temperature: 0.2, topP: 0.9, maxTokens: 256, stop: ['\n', 'END'], timeout: 30_000, retries: 2, tools: true, extraBody: { chat_template_kwargs: { enable_thinking: false } }, stripReasoning: false });

  const c2 = addTargetOptions(new Command().exitOverride());
  c2.parse(['--target-option', 'temperature=0', '--target-option', 'max-tokens=64', '--target-option', 'stop=END', '--target-option', 'extraBody={"top_k":20}'], { from: 'user' });
  const f2 = targetFlagsOf(c2.opts());
  t.deepEqual(f2.raw, { temperature: 0, maxTokens: 64, stop: 'END', extraBody: { top_k: 20 } });
  t.is(f2.name('maxTokens'), '--target-option max-tokens');
  t.regex(err(t, () => resolveTargetOptions('sim/qwen-3b', f2.raw, { name: f2.name })).message, /^--target-option temperature: does not apply to sim targets/);

  const c3 = addTargetOptions(new Command().exitOverride());
  c3.parse(['--temperature', '0.2', '--target-option', 'temperature=0.3'], { from: 'user' });
  t.throws(() => targetFlagsOf(c3.opts()), { message: /--target-option temperature: temperature is already given by --temperature; give it once/ });
  t.throws(() => addTargetOptions(new Command().exitOverride()).parse(['--target-option', 'temperature'], { from: 'user' }), { message: /--target-option: "temperature" is not KEY=VALUE/ });
  t.throws(() => addTargetOptions(new Command().exitOverride()).parse(['--extra-body', '{nope'], { from: 'user' }), { message: /--extra-body: not JSON/ });
  t.throws(() => addTargetOptions(new Command().exitOverride()).parse(['--temperature', 'hot'], { from: 'user' }), { message: /--temperature: must be a number, got "hot"/ });
  // nothing given: nothing set, so --strip-reasoning's default stays out of the key
  t.deepEqual(targetFlagsOf(addTargetOptions(new Command()).parse([], { from: 'user' }).opts()).raw, {});
  t.is(unescapeStop('a\\nb\\tc\\\\n'), 'a\nb\tc\\n');
});

test('cli options - the target settings are listed under their own heading in --help', (t) => {
  const help = addTargetOptions(new Command('eval')).helpInformation();
  t.regex(help, /Target settings \(openai:… targets; lm\/ takes --temperature and --top-p only; sim\/ none; part of the episode cache key/);
  for (const s of TARGET_SETTINGS) t.true(help.includes(s.flag), s.flag);
  t.regex(help, /--target-option <key=value>/);
  t.regex(help, /--no-strip-reasoning/);
});
