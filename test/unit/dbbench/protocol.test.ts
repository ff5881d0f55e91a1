import test from 'ava';
import { compareFc, compareV02Read, computeMetrics, parseV02, tableHashRepr } from '../../../envs/dbbench/index.ts';
import { fcHashValue, truncate } from '../../../envs/dbbench/protocol.ts';
import { pyFloat, pyFloatRepr, pyLiteralEval, pyRepr, pyRowsRepr, pyStrRepr } from '../../../envs/dbbench/python.ts';

test('repr - floats as Python prints them', (t) => {
  const cases: [number, string][] = [
    [1174, '1174.0'], [0.1, '0.1'], [1e16, '1e+16'], [1.5e-5, '1.5e-05'], [123456789012345.6, '123456789012345.6'],
    [-2.5, '-2.5'], [0.0001, '0.0001'], [1e22, '1e+22'], [NaN, 'nan'], [-0, '-0.0'],
  ];
  for (const [x, s] of cases) t.is(pyFloatRepr(x), s, String(x));
});

test('repr - strings pick quotes and escape like Python', (t) => {
  t.is(pyStrRepr('abc'), "'abc'");
  t.is(pyStrRepr("Men's"), '"Men\'s"');
  t.is(pyStrRepr(`a'b"c`), `'a\\'b"c'`);
  t.is(pyStrRepr('a\nb\\'), "'a\\nb\\\\'");
  t.is(pyStrRepr('Vitória — 3–1'), "'Vitória — 3–1'");
  t.is(pyStrRepr('\u00a0\x07'), "'\\xa0\\x07'");
});

test('repr - rows as a list of tuples', (t) => {
  t.is(pyRowsRepr([]), '[]');
  t.is(pyRowsRepr([['Women +60kg Bronze']]), "[('Women +60kg Bronze',)]");
  t.is(pyRowsRepr([[1174.0]]), '[(1174.0,)]');
  t.is(pyRowsRepr([[3n, null, 'x']]), "[(3, None, 'x')]");
  t.is(pyRepr({ kind: 'decimal', text: '2.5000' }), "Decimal('2.5000')");
});

test('truncate - over 800 characters is cut and marked', (t) => {
  t.is(truncate('x'.repeat(800)), 'x'.repeat(800));
  t.is(truncate('x'.repeat(801)), `${'x'.repeat(800)}[TRUNCATED]`);
});

test('python - literal eval and float()', (t) => {
  t.deepEqual(pyLiteralEval(' ["a", 1, 2.5]'), { t: 'list', items: [{ t: 'str', v: 'a' }, { t: 'int', v: 1n }, { t: 'float', v: 2.5 }] });
  t.deepEqual(pyLiteralEval("('x',)"), { t: 'tuple', items: [{ t: 'str', v: 'x' }] });
  t.throws(() => pyLiteralEval('[Giza]'));
  t.is(pyFloat(' 1_000.5 '), 1000.5);
  t.is(pyFloat('1,000'), null);
  t.is(pyFloat('inf'), Infinity);
});

test('v0.2 parse - Operation runs the first sql block, flattened to one line', (t) => {
  t.deepEqual(parseV02('think\nAction: Operation\n```sql\nSELECT 1\nFROM t;\n```\n```sql\nSELECT 2\n```', true), { kind: 'operation', sql: 'SELECT 1 FROM t;' });
  t.deepEqual(parseV02('Action: Operation\nSELECT 1', true), { kind: 'invalid-operation' });
  t.deepEqual(parseV02('Action: Answer\nFinal Answer: ["x"]', true), { kind: 'answer', answer: ' ["x"]' });
  t.deepEqual(parseV02('Final Answer: ["x"]', true), { kind: 'no-answer' }, 'needs a newline before Final Answer');
  t.deepEqual(parseV02('Action: Operation\n```sql\nSELECT 1\n```', false), { kind: 'no-answer' }, 'no rounds left');
});

test('v0.2 compare - floats, exact strings, sets', (t) => {
  t.true(compareV02Read(' ["1174"]', ['1174.0']));
  t.true(compareV02Read(' [1174.0]', ['1174']));
  t.true(compareV02Read(' ["Giza"]', ['Giza']));
  t.false(compareV02Read(' ["giza"]', ['Giza']));
  t.true(compareV02Read(' ["b", "a"]', ['a', 'b']));
  t.false(compareV02Read(' [1, 2]', ['1', '2']), 'ints and strings differ in a set');
  t.false(compareV02Read(' Giza', ['Giza']), 'not a literal: the raw text with its leading space');
  t.true(compareV02Read('Giza', ['Giza']));
  t.false(compareV02Read(' "Giza"', ['Giza']), 'a bare string is a list of characters');
});

test('main-fc compare - percent, separators, null-likes, tolerance', (t) => {
  t.true(compareFc(['45%'], ['45'], 'other'));
  t.true(compareFc(['1,234'], ['1234'], 'counting'));
  t.true(compareFc(['None'], ['0'], 'other'));
  t.true(compareFc(['3.141'], ['3.14'], 'aggregation-AVG'));
  t.false(compareFc(['3.2'], ['3.14'], 'aggregation-AVG'));
  t.true(compareFc(['2', '1'], ['1.001', '2'], 'other'));
  t.true(compareFc(['b', 'a'], ['a', 'b'], 'other'));
  t.true(compareFc(fcHashValue("[('abc12',)]"), "[('abc12',)]", 'INSERT'));
});

test('table hash - AgentBench formula, NULLs skipped, empty table is None', (t) => {
  // md5("a,b")[:5] and md5("c")[:5], sorted, joined by ",", md5 of that
  const h = tableHashRepr([['a', 'b'], ['c', null]]);
  t.regex(h, /^\[\('[0-9a-f]{32}',\)\]$/);
  t.is(h, tableHashRepr([['c'], ['a', 'b']]));
  t.is(tableHashRepr([]), '[(None,)]');
});

test('metrics - per type, SELECT, overall is the mean of SELECT/INSERT/UPDATE', (t) => {
  const m = computeMetrics([
    { type: 'counting', correct: true },
    { type: 'other', correct: false },
    { type: 'INSERT', correct: true },
    { type: 'UPDATE', correct: false },
  ]);
  t.is(m.accuracy.SELECT, 0.5);
  t.is(m.accuracy.counting, 1);
  t.is(m.accuracy.INSERT, 1);
  t.is(m.overall, 0.5);
  t.is(m.accuracy.ranking, 0);
});
