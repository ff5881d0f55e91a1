import test from 'ava';
import { ChunkTimes, stragglerDeadline } from '../../../drivers/index.ts';

test('stragglers - the deadline is factor × the median answer time, never under minMs, unknown before any answer', (t) => {
  const times = new ChunkTimes();
  const o = { factor: 3, minMs: 1000 };
  t.is(stragglerDeadline(o, times), undefined);
  for (const ms of [100, 200, 300]) times.add(ms);
  t.is(times.median(), 200);
  t.is(stragglerDeadline(o, times), 1000, 'below minMs: minMs');
  for (const ms of [2000, 2000, 2000, 2000]) times.add(ms);
  t.is(times.median(), 2000);
  t.is(stragglerDeadline(o, times), 6000);
  // a few very slow answers do not move the median much: one straggler does not raise the bar for the next
  times.add(600_000);
  t.is(stragglerDeadline(o, times), 6000);
});

test('stragglers - the history keeps the last 256 answer times', (t) => {
  const times = new ChunkTimes();
  for (let i = 0; i < 300; i++) times.add(i < 100 ? 1 : 50);
  t.is(times.median(), 50);
});
