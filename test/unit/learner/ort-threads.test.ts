import test from 'ava';
import { ortThreadOptions } from '../../../learner/graph.ts';

test('ort threads - spinning is off unless HR1_ORT_SPINNING=1; HR1_ORT_THREADS sets the pool, a bad value is ignored', (t) => {
  t.deepEqual(ortThreadOptions({}).extra, { session: { intra_op: { allow_spinning: '0' }, inter_op: { allow_spinning: '0' } } });
  t.is(ortThreadOptions({ HR1_ORT_SPINNING: '1' }).extra, undefined);
  t.is(ortThreadOptions({ HR1_ORT_THREADS: '2' }).intraOpNumThreads, 2);
  t.is(ortThreadOptions({ HR1_ORT_THREADS: 'many' }).intraOpNumThreads, undefined);
  t.is(ortThreadOptions({ HR1_ORT_THREADS: '0' }).intraOpNumThreads, undefined);
});
