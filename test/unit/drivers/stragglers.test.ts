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

test('chunk gate - at most `slots` in flight; a freed slot goes to the lowest priority, then the first to ask', async (t) => {
  const { ChunkGate } = await import('../../../drivers/index.ts');
  const g = new ChunkGate(2);
  const order: string[] = [];
  const take = (name: string, p: number) => g.acquire(p).then((release) => (order.push(name), release));
  const a = await take('a', 5);
  const b = await take('b', 5);
  const waits = [take('c3', 3), take('d1', 1), take('e3', 3)];
  await new Promise((r) => setImmediate(r));
  t.deepEqual(order, ['a', 'b'], 'two slots: the third waits');
  t.is(g.queued, 3);
  a();
  a(); // a second release of the same slot frees nothing more
  await new Promise((r) => setImmediate(r));
  t.deepEqual(order, ['a', 'b', 'd1']);
  b();
  await new Promise((r) => setImmediate(r));
  t.deepEqual(order, ['a', 'b', 'd1', 'c3']);
  (await waits[1]!)();
  await new Promise((r) => setImmediate(r));
  t.deepEqual(order, ['a', 'b', 'd1', 'c3', 'e3']);
  t.throws(() => new ChunkGate(0), { message: /at least one slot/ });
});
