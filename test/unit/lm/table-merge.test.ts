import test from 'ava';
import { mergeZooTable, ZOO_TABLE_BEGIN, ZOO_TABLE_END } from '../../../policies/targets/lm/table.ts';

const head = '| target | env | d_model × layers | ctx | episodes | steps | seed | teacher | params | loss first → last | build s | success [95 % CI] | score | noop | invalid | mean steps |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|';
const cfg = (name: string, episodes = 400): string => `| lm/${name} | alfworld | 96 × 2 | 256 | ${episodes} | 800 | 1 | explorer`;
const measured = (name: string, success: string, episodes = 400): string => `${cfg(name, episodes)} | 230,912 | 2.36 → 0.15 | 847 | ${success} [1.0%, 2.0%] | 0.18 | 41.5% | 0.0% | 43.2 |`;
const unbuilt = (name: string, episodes = 400): string => `${cfg(name, episodes)} | – | – | – | not built | – | – | – | – |`;
const block = (rows: string[], sizes = 'alfworld 140 × 3'): string => [ZOO_TABLE_BEGIN, '', `Measured vanilla success (no patch) on each split, tasks × seeds: ${sizes} (ALFWorld valid_seen …).`, '', head, ...rows, '', ZOO_TABLE_END].join('\n');
const doc = (rows: string[], sizes?: string): string => `# Zoo\n\nprose\n\n${block(rows, sizes)}\n\nafter\n`;
const rowsOf = (text: string): string[] => text.split('\n').filter((l) => l.startsWith('| lm/'));

test('a model not built here keeps its earlier measured row; a measured row replaces the earlier one', (t) => {
  const before = doc([measured('a', '10.0%'), measured('b', '20.0%'), unbuilt('c')]);
  const { text, kept } = mergeZooTable(before, block([measured('a', '11.0%'), unbuilt('b'), measured('c', '5.0%'), measured('d', '7.0%')]));
  t.is(kept, 1);
  t.deepEqual(rowsOf(text), [measured('a', '11.0%'), measured('b', '20.0%'), measured('c', '5.0%'), measured('d', '7.0%')]);
  t.regex(text, /1 row from an earlier table: 1 of models not built or vendored where this table was written\./);
  t.true(text.startsWith('# Zoo\n\nprose\n\n') && text.endsWith('\n\nafter\n'));
});

test('an earlier row of another config is not kept for an unbuilt model', (t) => {
  const { text, kept } = mergeZooTable(doc([measured('b', '20.0%', 400)]), block([unbuilt('b', 2000)]));
  t.is(kept, 0);
  t.deepEqual(rowsOf(text), [unbuilt('b', 2000)]);
  t.notRegex(text, /measured earlier/);
});

test('with --only the other earlier rows stay in their place', (t) => {
  const { text, kept } = mergeZooTable(doc([measured('a', '10.0%'), measured('b', '20.0%'), measured('c', '30.0%')]), block([measured('b', '21.0%')]));
  t.is(kept, 2);
  t.deepEqual(rowsOf(text), [measured('a', '10.0%'), measured('b', '21.0%'), measured('c', '30.0%')]);
  t.regex(text, /2 rows from an earlier table: 2 not measured again \(a run with --only\)\./);
});

test('a file without a generated block gets the table appended', (t) => {
  const { text, kept } = mergeZooTable('# Zoo\n', block([measured('a', '10.0%')]));
  t.is(kept, 0);
  t.deepEqual(rowsOf(text), [measured('a', '10.0%')]);
  t.true(text.includes(ZOO_TABLE_BEGIN) && text.includes(ZOO_TABLE_END));
});

test('with the zoo order a row measured alone goes to its entry\'s place', (t) => {
  const { text } = mergeZooTable(doc([measured('a', '10.0%'), measured('c', '30.0%')]), block([measured('b', '21.0%')]), ['a', 'b', 'c']);
  t.deepEqual(rowsOf(text), [measured('a', '10.0%'), measured('b', '21.0%'), measured('c', '30.0%')]);
});

test('the intro keeps the split sizes of the envs whose rows were kept', (t) => {
  const { text } = mergeZooTable(doc([measured('a', '10.0%')], 'alfworld 140 × 3, dbbench 60 × 3'), block([measured('b', '21.0%')], 'alfworld 140 × 3'));
  t.regex(text, /tasks × seeds: alfworld 140 × 3, dbbench 60 × 3 \(ALFWorld/);
});
