/** A user's zoo file: entries checked with the entry and the field named in every error. */
import test from 'ava';
import { ZOO } from '../../../policies/targets/lm/zoo.ts';
import { parseZooConfig } from '../../../policies/targets/lm/user-zoo.ts';

const ok = 'zoo:\n  - { name: my-alf, envs: [alfworld], dModel: 96, nLayers: 2, nHeads: 4, dFf: 256, maxLen: 256, episodes: 40, steps: 80, seed: 7 }\n  - { name: my-alf-ft, base: my-alf, envs: [alfworld], episodes: 40, steps: 40, seed: 8 }\n';
const err = (text: string): string => {
  try {
    parseZooConfig(text, 'my.yaml', ZOO);
  } catch (e) {
    t0.code = (e as { code?: string }).code ?? '';
    return (e as Error).message;
  }
  return 'no error';
};
const t0 = { code: '' };

test('user zoo - a file of entries parses; an entry with a base takes the base\'s sizes; a bare list works too', (t) => {
  const es = parseZooConfig(ok, 'my.yaml', ZOO);
  t.deepEqual(es.map((e) => e.name), ['my-alf', 'my-alf-ft']);
  t.deepEqual([es[1]!.dModel, es[1]!.nLayers, es[1]!.nHeads, es[1]!.dFf, es[1]!.maxLen], [96, 2, 4, 256, 256]);
  const bare = parseZooConfig('- { name: ft-of-builtin, base: alf-s-256-a, envs: [alfworld], episodes: 10, steps: 10, seed: 1 }\n', 'b.yaml', ZOO);
  t.is(bare[0]!.dModel, 96);
});

test('user zoo - bad entries are LM_BAD_CONFIG naming the file, the entry and the field', (t) => {
  t.regex(err(ok.replace('seed: 7', 'seed: 7, dmodel: 3')), /^my\.yaml: zoo\[0\] \(my-alf\): unknown field "dmodel" \(known: name, envs, dModel/);
  t.is(t0.code, 'LM_BAD_CONFIG');
  t.regex(err(ok.replace('nHeads: 4', 'nHeads: 5')), /zoo\[0\] \(my-alf\)\.nHeads: must divide dModel \(96\)/);
  t.regex(err(ok.replace('maxLen: 256', 'maxLen: 10')), /zoo\[0\] \(my-alf\)\.maxLen: /);
  t.regex(err(ok.replace('base: my-alf', 'base: nope')), /zoo\[1\] \(my-alf-ft\)\.base: "nope" is not in the zoo nor in this file/);
  t.regex(err(ok.replace('name: my-alf-ft, base: my-alf,', 'name: my-alf-ft, base: my-alf, dModel: 128,')), /zoo\[1\] \(my-alf-ft\)\.dModel: 128 differs from its base's 96/);
  t.regex(err(ok.replace('name: my-alf,', 'name: alf-s-256-a,').replace('base: my-alf', 'base: alf-s-256-a')), /zoo\[0\] \(alf-s-256-a\)\.name: "alf-s-256-a" is a built-in zoo entry/);
  t.regex(err(ok.replace('dModel: 96, nLayers: 2, ', '')), /zoo\[0\] \(my-alf\)\.dModel: is required/);
  t.regex(err(ok.replace('envs: [alfworld], dModel', 'envs: [minecraft], dModel')), /zoo\[0\] \(my-alf\)\.envs\.0: /);
  t.regex(err(ok.replace('seed: 7 }', 'seed: 7, compactRoom: true }').replace('envs: [alfworld], dModel', 'envs: [webshop], dModel')), /zoo\[0\] \(my-alf\)\.compactRoom: the compact room listing is for ALFWorld/);
  t.regex(err(ok.replace('seed: 7 }', "seed: 7, slots: values }").replace('envs: [alfworld], dModel', 'envs: [webshop], dModel')), /zoo\[0\] \(my-alf\)\.slots: 'values' slots are DBBench's/);
  t.regex(err(ok.replace('seed: 7 }', 'seed: 7, slots: names }')), /zoo\[0\] \(my-alf\)\.slots: /);
  t.regex(err(ok.replace('seed: 7 }', 'seed: 7, phrasing: wide }')), /zoo\[0\] \(my-alf\)\.phrasing: the synthetic tasks' phrasing is for DBBench/);
  t.regex(err(ok.replace('seed: 7 }', 'seed: 7, phrasing: long }')), /zoo\[0\] \(my-alf\)\.phrasing: /);
  // a sketch parser: DBBench only, trained from scratch
  t.regex(err(ok.replace('seed: 7 }', 'seed: 7, kind: sketch }')), /zoo\[0\] \(my-alf\)\.kind: a sketch parser plays DBBench only/);
  t.regex(err(ok.replace('seed: 7 }', 'seed: 7, kind: parser }')), /zoo\[0\] \(my-alf\)\.kind: /);
  t.regex(err('- { name: my-sk, base: db-sketch-a, envs: [dbbench], kind: sketch, episodes: 10, steps: 10, seed: 1 }\n'), /zoo\[0\] \(my-sk\)\.base: a sketch parser is trained from scratch/);
  const sk = parseZooConfig('- { name: my-sk, envs: [dbbench], kind: sketch, phrasing: mined, dModel: 64, nLayers: 1, nHeads: 2, dFf: 128, maxLen: 256, episodes: 100, steps: 20, seed: 1 }\n', 's.yaml', ZOO);
  t.is(sk[0]!.kind, 'sketch');
  t.regex(err(ok.replace('seed: 7 }', 'seed: 7, insertColumns: mention }')), /zoo\[0\] \(my-alf\)\.insertColumns: how synthetic INSERTs name their columns is for DBBench/);
  t.regex(err(ok.replace('seed: 7 }', 'seed: 7, insertColumns: header }')), /zoo\[0\] \(my-alf\)\.insertColumns: /);
  t.regex(err(ok.replace('seed: 7 }', 'seed: 7, searchOrder: sideways }')), /zoo\[0\] \(my-alf\)\.searchOrder: /);
  t.regex(err(ok.replace('envs: [alfworld], dModel', 'envs: [webshop], dModel').replace('seed: 7 }', 'seed: 7, searchOrder: down }')), /zoo\[0\] \(my-alf\)\.searchOrder: the explorer's search order is for ALFWorld/);
  t.regex(err(ok.replace('seed: 8 }', 'seed: 8, rope: true }')), /zoo\[1\] \(my-alf-ft\)\.rope: true differs from its base's false/);
  t.regex(err('zoo: [ {name: a'), /^my\.yaml: not YAML/);
  t.regex(err('models: []'), /^my\.yaml: a zoo file is `zoo: \[entries\]`/);
});
