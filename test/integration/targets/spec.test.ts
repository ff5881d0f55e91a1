import test from 'ava';
import { formatTargetSpec, parseTargetSpec, TargetSpecError } from '../../../policies/targets/spec.ts';

test('spec - sim, openai and lm forms parse', (t) => {
  t.deepEqual(parseTargetSpec('sim/small-7b'), { kind: 'sim', profile: 'small-7b' });
  t.deepEqual(parseTargetSpec('lm/qwen2.5-0.5b'), { kind: 'lm', name: 'qwen2.5-0.5b' });
  t.deepEqual(parseTargetSpec('openai:http://127.0.0.1:8000/v1#Qwen/Qwen2.5-7B-Instruct'), {
    kind: 'openai',
    baseUrl: 'http://127.0.0.1:8000/v1',
    model: 'Qwen/Qwen2.5-7B-Instruct',
  });
});

test('spec - openai: a trailing slash is dropped, the first # ends the URL, https works', (t) => {
  t.deepEqual(parseTargetSpec('openai:https://api.example.com/v1/#gpt-4o-mini'), { kind: 'openai', baseUrl: 'https://api.example.com/v1', model: 'gpt-4o-mini' });
  t.deepEqual(parseTargetSpec('openai:http://h:8080/v1#org/model#rev2'), { kind: 'openai', baseUrl: 'http://h:8080/v1', model: 'org/model#rev2' });
});

test('spec - formatTargetSpec is the inverse of parseTargetSpec', (t) => {
  for (const s of ['sim/large-70b', 'lm/x', 'openai:http://127.0.0.1:8080/v1#llama']) t.is(formatTargetSpec(parseTargetSpec(s)), s);
});

test('spec - anything else is a TargetSpecError that lists the accepted forms with examples', (t) => {
  for (const bad of ['gpt-4', '', 'vllm:http://x#m', 'sim', 'lm', 'simulated/small']) {
    const e = t.throws(() => parseTargetSpec(bad), { instanceOf: TargetSpecError });
    t.is(e.code, 'TARGET_SPEC');
    t.regex(e.message, /sim\/<profile> \(e\.g\. sim\/small-7b\).*openai:<base-url>#<model> \(e\.g\. openai:http:\/\/.*lm\/<name> \(e\.g\. lm\//, bad);
  }
});

test('spec - malformed parts of a known form say what is wrong', (t) => {
  const cases: [string, RegExp][] = [
    ['sim/', /"" is not a sim profile name; write sim\/<profile>/],
    ['sim/has space', /is not a sim profile name/],
    ['lm/', /is not a model name; write lm\/<name>/],
    ['openai:http://127.0.0.1:8000/v1', /names no model; write openai:<base-url>#<model>/],
    ['openai:127.0.0.1:8000#m', /base URL must be http:\/\/ or https:\/\/|is not a URL/],
    ['openai:not a url#m', /"not a url" is not a URL/],
    ['openai:ftp://h/v1#m', /must be http:\/\/ or https:\/\/, got ftp:/],
    ['openai:http://h/v1#', /"" is not a model name; put the served model's name after #/],
  ];
  for (const [spec, re] of cases) {
    const e = t.throws(() => parseTargetSpec(spec), { instanceOf: TargetSpecError }, spec);
    t.regex(e.message, re, spec);
    t.is(e.spec, spec);
  }
});
