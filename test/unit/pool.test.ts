import test from 'ava';
import { fileURLToPath } from 'node:url';
import { BackpressureError, ConfigError, PoolTaskError } from '../../cluster/errors.ts';
import { WorkerPool } from '../../cluster/pool.ts';

const MODULE = fileURLToPath(new URL('../fixtures/pool-tasks.ts', import.meta.url));

test('pool - runs tasks in worker threads and keeps the input order', async (t) => {
  const pool = new WorkerPool({ module: MODULE, threads: 2 });
  try {
    const xs = Array.from({ length: 500 }, (_, i) => i);
    t.deepEqual(await pool.runMany('square', xs), xs.map((x) => x * x));
    const threads = new Set(await pool.runMany<number>('thread', Array.from({ length: 200 }, () => null)));
    t.is(threads.size, 2, 'both threads served');
    t.false(threads.has(0), 'not the main thread');
  } finally {
    await pool.destroy();
  }
});

test('pool - values cross the thread boundary through the codec', async (t) => {
  const pool = new WorkerPool({ module: MODULE, threads: 1 });
  try {
    const v = { s: 'é∑ ok', n: [1, 2.5, -3], nested: { flag: true, nil: null }, bytes: new Uint8Array([1, 2, 3]) };
    const back = (await pool.run('echo', v)) as typeof v;
    t.deepEqual({ ...back, bytes: new Uint8Array(back.bytes) }, v);
  } finally {
    await pool.destroy();
  }
});

test('pool - a task that throws rejects only its own call, with the worker stack', async (t) => {
  const pool = new WorkerPool({ module: MODULE, threads: 1 });
  try {
    const out = await Promise.all([pool.run('square', 3), pool.run('fail', 'bad input'), pool.run('square', 4)].map((p) => p.then((v) => v, (e: Error) => e)));
    t.is(out[0], 9);
    t.is(out[2], 16);
    t.true(out[1] instanceof PoolTaskError);
    t.regex((out[1] as PoolTaskError).message, /bad input/);
    t.regex((out[1] as PoolTaskError).remoteStack ?? '', /pool-tasks\.ts/);
    const e = await t.throwsAsync(pool.run('nope', 1), { instanceOf: PoolTaskError });
    t.regex(e!.message, /no task "nope"; it has square, thread/);
  } finally {
    await pool.destroy();
  }
});

test('pool - many small tasks are batched into few messages', async (t) => {
  const pool = new WorkerPool({ module: MODULE, threads: 2, batchSize: 64 });
  try {
    // each task reports its thread; a batch is served by one thread, so runs of equal ids show batching
    const ids = await pool.runMany<number>('thread', Array.from({ length: 256 }, () => null));
    let switches = 0;
    for (let i = 1; i < ids.length; i++) if (ids[i] !== ids[i - 1]) switches++;
    t.true(switches <= 8, `256 tasks in at most ~4-8 messages (thread switches: ${switches})`);
  } finally {
    await pool.destroy();
  }
});

test('pool - refuses more queued tasks than maxQueued with BackpressureError', async (t) => {
  const pool = new WorkerPool({ module: MODULE, threads: 1, maxQueued: 5 });
  try {
    const out = await Promise.all(Array.from({ length: 8 }, () => pool.run('spin', 1000).then(() => 'ok', (e: Error) => e)));
    t.is(out.filter((x) => x === 'ok').length, 5);
    t.true(out[7] instanceof BackpressureError);
  } finally {
    await pool.destroy();
  }
});

test('pool - bad options name the option and what it needs', (t) => {
  t.throws(() => new WorkerPool({ module: MODULE, threads: 0 }), { instanceOf: ConfigError, message: /options\.threads must be a positive integer/ });
  t.throws(() => new WorkerPool({ module: MODULE, batchSize: 1.5 }), { instanceOf: ConfigError, message: /options\.batchSize/ });
  t.throws(() => new WorkerPool({ module: '' }), { instanceOf: ConfigError, message: /options\.module must name the worker module/ });
  t.throws(() => new WorkerPool({ module: MODULE, extra: 1 } as never), { instanceOf: ConfigError });
});
