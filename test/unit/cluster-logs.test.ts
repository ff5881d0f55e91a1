import test from 'ava';
import { ClusterNode } from '../../cluster/node.ts';
import { InProcessBus } from '../../cluster/bus-inproc.ts';
import { ConfigError } from '../../cluster/errors.ts';
import { LogLimiter, MAX_LOG_MESSAGE_CHARS, atLeast, clipMessage, formatLogRecord } from '../../cluster/logs.ts';
import { resolveClusterOptions } from '../../cluster/client.ts';
import { inProcessTransport } from '../behaviour/harness.ts';
import { logsSuite } from '../behaviour/logs-suite.ts';

// the same suite runs over a real nats-server in test/integration/cluster-logs.test.ts
logsSuite(test, () => inProcessTransport());

test('logs - the limiter lets a burst of `rate` through, then `rate` a second, and hands the drop count to the next record', (t) => {
  let now = 0;
  const l = new LogLimiter(3, () => now);
  t.deepEqual([l.take(), l.take(), l.take(), l.take(), l.take()], [0, 0, 0, undefined, undefined]);
  t.is(l.dropped, 2);
  now = 340; // a little over one token
  t.is(l.take(), 2, 'the two dropped ones ride on the next record');
  t.is(l.take(), undefined);
  now = 10_000;
  t.deepEqual([l.take(), l.take(), l.take(), l.take()], [1, 0, 0, undefined], 'the bucket holds at most `rate`');
  const none = new LogLimiter(0, () => now);
  t.is(none.take(), undefined, 'rate 0 sends nothing');
});

test('logs - levels, the line format and long messages', (t) => {
  t.true(atLeast('error', 'warn'));
  t.true(atLeast('warn', 'warn'));
  t.false(atLeast('info', 'warn'));
  const r = { nodeId: 'n1', actorId: 'Counter-ab-0', instanceId: 'Counter-ab-0~0', cls: 'Counter', level: 'warn' as const, source: 'actor' as const, message: 'hm', time: 0 };
  t.is(formatLogRecord(r), '[node n1] Counter-ab-0 warn: hm');
  t.is(formatLogRecord({ ...r, actorId: '@learner', cls: 'Learner', name: 'learner', level: 'error', dropped: 3 }), '[node n1] Learner @learner error: hm (3 earlier lines dropped by the rate limit)');
  const long = clipMessage('x'.repeat(MAX_LOG_MESSAGE_CHARS + 10));
  t.true(long.startsWith('x'.repeat(MAX_LOG_MESSAGE_CHARS)) && long.endsWith('(10 more characters)'));
});

test('logs - bad options name the option', (t) => {
  const bus = new InProcessBus();
  t.regex(t.throws(() => new ClusterNode(bus, { logRate: -1 }), { instanceOf: ConfigError })!.message, /^logRate: must be a number of lines per second, 0 or more; got -1/);
  t.regex(t.throws(() => resolveClusterOptions({ logLevel: 'loud' as never }), { instanceOf: ConfigError })!.message, /^logLevel: /);
  t.is(resolveClusterOptions().logLevel, 'warn');
});
