import test from 'ava';
import { auc, bootstrapCI, rankOrder, spearman } from '../../../policies/scorer/index.ts';

test('auc - hand-computed values, ties count half, one class gives NaN', (t) => {
  t.is(auc([0.1, 0.4, 0.35, 0.8], [false, false, true, true]), 0.75);
  t.is(auc([1, 2, 3], [false, true, true]), 1);
  t.is(auc([3, 2, 1], [false, true, true]), 0);
  t.is(auc([0.5, 0.5], [false, true]), 0.5);
  t.true(Number.isNaN(auc([1, 2], [true, true])));
});

test('spearman - monotone is 1, reversed is -1', (t) => {
  t.is(spearman([1, 2, 3, 4], [10, 20, 30, 100]), 1);
  t.is(spearman([1, 2, 3, 4], [4, 3, 2, 1]), -1);
});

test('bootstrapCI - seeded, brackets the mean', (t) => {
  const xs = [0.1, 0.2, 0.3, 0.5, 0.9, 0.4];
  const a = bootstrapCI(xs, { seed: 1 });
  t.deepEqual(a, bootstrapCI(xs, { seed: 1 }));
  t.true(a[0] <= 0.4 && a[1] >= 0.4);
});

test('rankOrder - best first by the chosen model, ties by the other, then index', (t) => {
  const s = [
    { nonRegressive: 0.9, delta: 0.1 },
    { nonRegressive: 0.2, delta: 0.5 },
    { nonRegressive: 0.9, delta: 0.3 },
    { nonRegressive: 0.9, delta: 0.1 },
  ];
  t.deepEqual(rankOrder(s, 'reward'), [1, 2, 0, 3]);
  t.deepEqual(rankOrder(s, 'validation'), [2, 0, 3, 1]);
});
