import type { TestFn } from 'ava';
import { z } from 'zod';
import { defineActor } from '../../cluster/actor.ts';
import { pack } from '../../cluster/codec.ts';
import { encode } from '../../cluster/codec.ts';
import { ActorInitError, ActorTaskError } from '../../cluster/errors.ts';
import { LogRecordSchema, subjects, type HostedActor, type LogRecord } from '../../cluster/protocol.ts';
import { Counter, Fragile } from '../fixtures/actors.ts';
import { TestCluster, eventually, sleep, type Transport } from './harness.ts';

/** An actor that logs `n` lines at a level in one call. */
const Chatty = defineActor({
  name: 'Chatty',
  protocol: { say: { input: z.object({ level: z.enum(['info', 'warn', 'error']), msg: z.string(), n: z.number().int() }), output: z.null() } },
  create: () => ({}),
  handlers: {
    say: (_s, { level, msg, n }, ctx) => {
      for (let i = 0; i < n; i++) ctx.log[level](`${msg} ${i}`);
      return null;
    },
  },
});

/** The hosted-actor record of `actorId` as its node reports it now (a status ping). */
async function hostedOf(tc: TestCluster, actorId: string): Promise<HostedActor | undefined> {
  return (await tc.cluster.status(300)).flatMap((h) => h.actors).find((a) => a.actorId === actorId);
}

/**
 * What nodes tell observers about their actors (logs on `hr1.<cluster>.sys.log`, call counters
 * in heartbeats), written once and run over every transport (in-process in test/unit, a real
 * nats-server in test/integration).
 */
export function logsSuite(test: TestFn, transport: () => Transport): void {
  const start = (nodes?: Parameters<typeof TestCluster.start>[1]) => TestCluster.start(transport(), nodes ?? [{ printLogs: false }]);

  test('logs - an actor\'s ctx.log.warn and a handler that throws reach the driver\'s onLog with actor, class and node', async (t) => {
    const tc = await start();
    try {
      const got: LogRecord[] = [];
      tc.cluster.onLog((r) => got.push(r));
      await tc.cluster.bus.flush();
      const c = await tc.cluster.spawn(Counter);
      await c.warn('cache hit rate fell to 3%');
      await t.throwsAsync(c.fail('the disk is full'), { instanceOf: ActorTaskError });
      await eventually(() => got.length >= 2, 5000, 'two records');
      const node = tc.nodes[0]!.nodeId;
      const [warn, err] = got;
      t.like(warn, { nodeId: node, actorId: c.ref.actorId, cls: 'Counter', level: 'warn', source: 'actor', message: 'cache hit rate fell to 3%' });
      t.like(err, { nodeId: node, actorId: c.ref.actorId, cls: 'Counter', level: 'error', source: 'call', method: 'fail', code: 'ACTOR_TASK' });
      t.regex(err!.message, /^fail failed: the disk is full/);
      t.true(Math.abs(warn!.time - Date.now()) < 60_000, 'time is ms since the epoch');
      t.is(typeof warn!.instanceId, 'string');
    } finally {
      await tc.close();
    }
  });

  test('logs - a constructor that throws and a restart are reported; level and unsubscribe filter what a listener gets', async (t) => {
    const tc = await start();
    try {
      const all: LogRecord[] = [];
      const errors: LogRecord[] = [];
      tc.cluster.onLog((r) => all.push(r));
      const stop = tc.cluster.onLog((r) => errors.push(r), { level: 'error' });
      await tc.cluster.bus.flush();
      await t.throwsAsync(tc.cluster.spawn(Fragile, { throwInCreate: true }), { instanceOf: ActorInitError });
      const c = await tc.cluster.spawn(Counter.options({ maxRestarts: 1, name: `r${Date.now() % 100000}` }));
      await tc.cluster.kill(c, { restart: true });
      await c.warn('after the restart');
      await eventually(() => all.some((r) => r.message === 'after the restart'), 5000, 'the warning after the restart');
      const init = all.find((r) => r.source === 'init');
      t.like(init, { cls: 'Fragile', level: 'error', code: 'ACTOR_INIT' });
      t.regex(init!.message, /constructor refused: throwInCreate was set/);
      const restart = all.find((r) => r.source === 'restart');
      t.like(restart, { cls: 'Counter', actorId: c.ref.actorId, name: c.ref.name, level: 'warn' });
      t.regex(restart!.message, /restart 1/);
      t.deepEqual(errors.map((r) => r.source), ['init'], 'level error: warnings left out');
      stop();
      await c.fail('after unsubscribe').catch(() => {});
      await eventually(() => all.some((r) => r.method === 'fail'), 5000, 'the failure');
      t.is(errors.length, 1, 'an unsubscribed listener gets nothing more');
    } finally {
      await tc.close();
    }
  });

  test('logs - a flood is capped per replica and the dropped records are counted', async (t) => {
    const tc = await start([{ printLogs: false, logRate: 5 }]);
    try {
      const got: LogRecord[] = [];
      tc.cluster.onLog((r) => got.push(r));
      await tc.cluster.bus.flush();
      const c = await tc.cluster.spawn(Counter);
      await Promise.all(Array.from({ length: 60 }, (_, i) => c.warn(`line ${i}`)));
      const hosted = await hostedOf(tc, c.ref.actorId);
      const dropped = hosted?.logsDropped ?? -1;
      await eventually(() => got.length === 60 - dropped, 5000, `${60 - dropped} records`);
      t.true(got.length >= 5 && got.length <= 10, `a burst of 5, and about 5 a second after it: ${got.length}`);
      t.is(got.length + dropped, 60, 'every record is sent or counted');
      await sleep(450);
      await c.warn('after the flood');
      await eventually(() => got.some((r) => r.message === 'after the flood'), 5000, 'the record after the flood');
      const last = got.find((r) => r.message === 'after the flood')!;
      // the drops since the last record that went out ride on the next one
      t.true((last.dropped ?? 0) > 0, JSON.stringify(last));
      t.is(got.reduce((n, r) => n + (r.dropped ?? 0), 0), dropped, 'the dropped counts add up to the node\'s counter');
    } finally {
      await tc.close();
    }
  });

  test('logs - a message on the log subject that is not a record is ignored, and the subscriber keeps working', async (t) => {
    const tc = await start();
    try {
      const got: LogRecord[] = [];
      tc.cluster.onLog((r) => got.push(r));
      await tc.cluster.bus.flush();
      const subject = subjects.log(tc.name);
      const valid: LogRecord = { nodeId: 'elsewhere', actorId: 'A-1', instanceId: 'A-1~0', cls: 'A', level: 'warn', source: 'actor', message: 'valid', time: Date.now() };
      tc.cluster.bus.publish(subject, new Uint8Array([0xc1, 0xff]));
      tc.cluster.bus.publish(subject, pack({ nodeId: 5, level: 'loud' }));
      tc.cluster.bus.publish(subject, encode(LogRecordSchema, valid, 'log record'));
      await eventually(() => got.length >= 1, 5000, 'the valid record');
      await sleep(100);
      t.deepEqual(got, [valid]);
      t.is(tc.logs.filter((l) => /is not a log record/.test(l)).length, 1, 'noted once, through the log option');
      // a record from a node in another process reaches the `log` option as a line
      t.true(tc.logs.includes('[node elsewhere] A-1 warn: valid'), tc.logs.join('\n'));
      const c = await tc.cluster.spawn(Counter);
      await c.warn('still listening');
      await eventually(() => got.some((r) => r.message === 'still listening'), 5000, 'a record after the garbage');
      // a node in this process printed its own: the `log` option does not get it again
      t.false(tc.logs.some((l) => /still listening/.test(l)));
    } finally {
      await tc.close();
    }
  });

  test('logs - info chatter does not crowd warnings out, and stays out of the log option', async (t) => {
    const tc = await start([{ printLogs: false, logRate: 3 }]);
    try {
      const got: LogRecord[] = [];
      tc.cluster.onLog((r) => got.push(r));
      await tc.cluster.bus.flush();
      const c = await tc.cluster.spawn(Chatty);
      await c.say({ level: 'info', msg: 'chatter', n: 50 });
      await c.say({ level: 'warn', msg: 'warning', n: 2 });
      await eventually(() => got.filter((r) => r.level === 'warn').length === 2, 5000, 'both warnings');
      t.is(got.filter((r) => r.level === 'info').length, 3, 'a burst of 3 info lines');
      t.like(await hostedOf(tc, c.ref.actorId), { logsDropped: 47 });
      // the log option takes warn and above, from other processes' nodes; a forged remote info line stays out
      const remote: LogRecord = { nodeId: 'far', actorId: 'Chatty-x-0', instanceId: 'Chatty-x-0~0', cls: 'Chatty', level: 'info', source: 'actor', message: 'quiet', time: Date.now() };
      tc.cluster.bus.publish(subjects.log(tc.name), encode(LogRecordSchema, remote, 'log record'));
      await eventually(() => got.some((r) => r.message === 'quiet'), 5000, 'the remote info line');
      t.false(tc.logs.some((l) => /quiet|chatter/.test(l)), tc.logs.join('\n'));
    } finally {
      await tc.close();
    }
  });

  test('heartbeat - counts each replica\'s finished calls and failed ones, so two heartbeats give a call rate', async (t) => {
    const tc = await start();
    try {
      const c = await tc.cluster.spawn(Counter);
      for (let i = 0; i < 3; i++) await c.add(1);
      await c.fail('once').catch(() => {});
      t.like(await hostedOf(tc, c.ref.actorId), { calls: 4, errors: 1, logsDropped: 0 });
      await Promise.all(Array.from({ length: 20 }, () => c.add(1)));
      t.like(await hostedOf(tc, c.ref.actorId), { calls: 24, errors: 1 });
      // the periodic heartbeat carries them too
      await eventually(() => tc.cluster.liveNodes().flatMap((h) => h.actors).find((a) => a.actorId === c.ref.actorId)?.calls === 24, 5000, 'a heartbeat with 24 calls');
      t.pass();
    } finally {
      await tc.close();
    }
  });
}
