import test from 'ava';
import { Rng, hashString } from '../../cluster/rng.ts';

test('rng - the same seed gives the same sequence; another seed another', (t) => {
  const a = new Rng(42);
  const b = new Rng(42);
  const c = new Rng(43);
  const xs = Array.from({ length: 50 }, () => a.nextU32());
  t.deepEqual(Array.from({ length: 50 }, () => b.nextU32()), xs);
  t.notDeepEqual(Array.from({ length: 50 }, () => c.nextU32()), xs);
  t.deepEqual(new Rng('episode-1').shuffle([1, 2, 3, 4, 5, 6, 7, 8]), new Rng('episode-1').shuffle([1, 2, 3, 4, 5, 6, 7, 8]));
});

test('rng - int, next and pick stay in range and cover it', (t) => {
  const r = new Rng(7);
  const seen = new Set<number>();
  for (let i = 0; i < 2000; i++) {
    const k = r.int(10);
    t.true(k >= 0 && k < 10 && Number.isInteger(k));
    seen.add(k);
    const f = r.next();
    t.true(f >= 0 && f < 1);
  }
  t.is(seen.size, 10);
  t.throws(() => r.int(0), { instanceOf: RangeError, message: /positive integer/ });
  t.throws(() => r.pick([]), { instanceOf: RangeError });
});

test('rng - forks are independent streams and reproducible', (t) => {
  const f1 = new Rng(1).fork('a');
  const f2 = new Rng(1).fork('a');
  const g = new Rng(1).fork('b');
  const s1 = Array.from({ length: 10 }, () => f1.int(1000));
  t.deepEqual(Array.from({ length: 10 }, () => f2.int(1000)), s1);
  t.notDeepEqual(Array.from({ length: 10 }, () => g.int(1000)), s1);
  t.is(hashString('abc'), hashString('abc'));
  t.not(hashString('abc'), hashString('abd'));
});
