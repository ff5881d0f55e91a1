import { Writable } from 'node:stream';
import test from 'ava';
import { countProgress, formatDurationShort, formatProgressLine, formatRate, makeProgress, progressIntervalMs, DEFAULT_PROGRESS_INTERVAL_MS, PROGRESS_INTERVAL_ENV } from '../../../experiments/runner/progress.ts';

/** a non-TTY stream that keeps what was written */
function sink(): { stream: NodeJS.WriteStream; lines: () => string[] } {
  let buf = '';
  const w = new Writable({
    write(chunk: Buffer, _enc, cb) {
      buf += chunk.toString();
      cb();
    },
  });
  return { stream: w as unknown as NodeJS.WriteStream, lines: () => buf.split('\n').filter(Boolean) };
}

test('progress line - shows done/total with thousands separators, the floored percentage, the rate and the ETA', (t) => {
  // 1,240 episodes in 39.744 s: 31.2/s; 1,560 left at that rate: 50 s
  t.is(formatProgressLine({ label: 'eval', done: 1240, total: 2800, elapsedMs: 39_744 }), 'eval: 1,240/2,800 episodes (44%), 31.2/s, ETA 50 s');
  // 99.9 % is not shown as 100 %
  t.regex(formatProgressLine({ label: 'eval', done: 2799, total: 2800, elapsedMs: 1000 }), /\(99%\)/);
});

test('progress line - cached episodes count as done but not in the rate', (t) => {
  // 600 done, 500 of them from the cache: 100 ran in 10 s = 10.0/s; 400 left: 40 s
  t.is(formatProgressLine({ label: 'x', done: 600, total: 1000, cached: 500, elapsedMs: 10_000 }), 'x: 600/1,000 episodes (60%, 500 cached), 10.0/s, ETA 40 s');
});

test('progress line - no rate yet gives ETA ?, slow rates are per minute, the final line says how long it took', (t) => {
  t.is(formatProgressLine({ label: 'eval', done: 0, total: 10, elapsedMs: 5000 }), 'eval: 0/10 episodes (0%), 0.0/min, ETA ?');
  t.is(formatProgressLine({ label: 'eval', unit: 'steps', done: 1, total: 10, elapsedMs: 30_000 }), 'eval: 1/10 steps (10%), 2.0/min, ETA 4 min 30 s');
  t.is(formatProgressLine({ label: 'eval', done: 10, total: 10, elapsedMs: 4000, final: true }), 'eval: 10/10 episodes (100%), 2.5/s, took 4 s');
});

test('progress line - durations and rates read as short text', (t) => {
  t.is(formatDurationShort(400), '0 s');
  t.is(formatDurationShort(59_400), '59 s');
  t.is(formatDurationShort(185_000), '3 min 5 s');
  t.is(formatDurationShort(7_440_000), '2 h 4 min');
  t.is(formatRate(31.24), '31.2/s');
  t.is(formatRate(1234.4), '1,234/s');
  t.is(formatRate(0.05), '3.0/min');
});

test('progress interval - HR1_PROGRESS_INTERVAL takes ms or a duration; unset is the default; a bad value names the variable', (t) => {
  t.is(progressIntervalMs({}), DEFAULT_PROGRESS_INTERVAL_MS);
  t.is(progressIntervalMs({ [PROGRESS_INTERVAL_ENV]: '250' }), 250);
  t.is(progressIntervalMs({ [PROGRESS_INTERVAL_ENV]: '30s' }), 30_000);
  for (const bad of ['0', 'soon', '-5']) {
    const e = t.throws(() => progressIntervalMs({ [PROGRESS_INTERVAL_ENV]: bad }));
    t.regex(e!.message, /^HR1_PROGRESS_INTERVAL: ".*" is not a positive duration; write ms or e\.g\. "10s"/);
  }
});

test('count progress - lines mode writes lines only while the count moves, then a final line', async (t) => {
  let now = 0;
  const s = sink();
  const p = countProgress({ label: 'eval', total: 100, stream: s.stream, intervalMs: 5, now: () => now });
  // nothing done yet: no line (a line that says nothing new waits for PROGRESS_QUIET_MS)
  await new Promise((r) => setTimeout(r, 40));
  t.deepEqual(s.lines(), []);
  now = 2000;
  p.update(40);
  await waitFor(() => s.lines().length >= 1);
  t.is(s.lines()[0], 'eval: 40/100 episodes (40%), 20.0/s, ETA 3 s');
  // the same count again: no new line
  await new Promise((r) => setTimeout(r, 40));
  t.is(s.lines().length, 1);
  now = 5000;
  p.update(100);
  p.finish();
  t.is(s.lines().at(-1), 'eval: 100/100 episodes (100%), 20.0/s, took 5 s');
  // finish stops the timer: no line after it
  const n = s.lines().length;
  await new Promise((r) => setTimeout(r, 40));
  t.is(s.lines().length, n);
});

test('count progress - silent mode writes nothing', async (t) => {
  const s = sink();
  const p = countProgress({ label: 'eval', total: 10, stream: s.stream, mode: 'silent', intervalMs: 1 });
  p.update(5);
  await new Promise((r) => setTimeout(r, 20));
  p.finish();
  t.deepEqual(s.lines(), []);
});

test('exp progress - lines mode writes periodic lines within a unit, labelled with its place, then the unit line', async (t) => {
  let now = 0;
  const s = sink();
  const p = makeProgress('lines', s.stream, { intervalMs: 5, now: () => now });
  p.total(3);
  p.start('alfworld vanilla', 50);
  now = 1000;
  p.episodes(10, 50, 0);
  await waitFor(() => s.lines().length >= 1);
  t.is(s.lines()[0], '[1/3] alfworld vanilla: 10/50 episodes (20%), 10.0/s, ETA 4 s');
  p.done('alfworld vanilla', { skipped: false, ran: 50, cached: 0, ms: 5000 });
  t.is(s.lines().at(-1), '[1/3] alfworld vanilla: 50 episodes run, 0 cached, 5.0 s');
  p.stop();
});

async function waitFor(cond: () => boolean, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error('condition not met');
    await new Promise((r) => setTimeout(r, 5));
  }
}
