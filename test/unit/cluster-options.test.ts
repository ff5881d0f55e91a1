import test from 'ava';
import { Cluster, DEFAULT_CALL_TIMEOUT_MS, DEFAULT_DEAD_AFTER_MS, DEFAULT_MAX_INFLIGHT, DEFAULT_PLACEMENT_WAIT_MS, DEFAULT_SPAWN_TIMEOUT_MS, resolveClusterOptions } from '../../cluster/client.ts';
import { DEFAULT_HEARTBEAT_MS, init, resolveInitOptions } from '../../cluster/init.ts';
import { ConfigError } from '../../cluster/errors.ts';
import { InProcessBus } from '../../cluster/bus-inproc.ts';

test('cluster options - defaults, durations as ms or "30s", the …Ms names still work', (t) => {
  const d = resolveClusterOptions();
  t.like(d, { cluster: 'default', deadAfterMs: DEFAULT_DEAD_AFTER_MS, callTimeoutMs: DEFAULT_CALL_TIMEOUT_MS, spawnTimeoutMs: DEFAULT_SPAWN_TIMEOUT_MS, placementWaitMs: DEFAULT_PLACEMENT_WAIT_MS, maxInflight: DEFAULT_MAX_INFLIGHT });
  t.like(resolveClusterOptions({ deadAfter: '2s', callTimeout: '1m', spawnTimeout: 500, placementWait: '0ms' }), { deadAfterMs: 2000, callTimeoutMs: 60_000, spawnTimeoutMs: 500, placementWaitMs: 0 });
  t.like(resolveClusterOptions({ deadAfterMs: 900, callTimeoutMs: 10_000 }), { deadAfterMs: 900, callTimeoutMs: 10_000 });
  t.like(resolveClusterOptions({ deadAfterMs: '1.5s' }), { deadAfterMs: 1500 });
  t.like(resolveClusterOptions({ deadAfter: 900, deadAfterMs: 900 }), { deadAfterMs: 900 });
  const r = resolveClusterOptions({ cluster: 'x1' });
  t.is(resolveClusterOptions(r), r, 'resolved once');
  t.like(resolveInitOptions({ heartbeat: '200ms' }), { heartbeatMs: 200, localNode: true, inProcess: false });
  t.like(resolveInitOptions({ heartbeatMs: 150, address: 'nats://127.0.0.1:4222' }), { heartbeatMs: 150, localNode: false });
  t.is(resolveInitOptions().heartbeatMs, DEFAULT_HEARTBEAT_MS);
  t.like(resolveInitOptions({ cluster: undefined, inProcess: undefined, user: undefined }), { inProcess: false, auth: {} });
});

test('cluster options - a bad value is a ConfigError naming the option', (t) => {
  const bad: [unknown, RegExp][] = [
    [{ deadAfter: 'soon' }, /^deadAfter: duration "soon" is not understood/],
    [{ callTimeoutMs: 0 }, /^callTimeoutMs: duration must be above 0/],
    [{ spawnTimeout: -1 }, /^spawnTimeout: duration must be a non-negative number/],
    [{ maxInflight: 0 }, /^maxInflight: /],
    [{ cluster: 'a b' }, /^cluster: "a b" is not a valid cluster name/],
    [{ deadAfter: 1000, deadAfterMs: 2000 }, /^deadAfter: give deadAfter or deadAfterMs, not both/],
    [{ deadAfterMS: 1000 }, /deadAfterMS/],
    [{ log: 'yes' }, /^log: log must be a function/],
  ];
  for (const [o, re] of bad) {
    const e = t.throws(() => resolveClusterOptions(o as never), { instanceOf: ConfigError });
    t.regex(e!.message, re);
  }
  t.regex(t.throws(() => resolveInitOptions({ heartbeat: 'often' }), { instanceOf: ConfigError })!.message, /^heartbeat: /);
  t.regex(t.throws(() => resolveInitOptions({ resources: { cpu: -1 } }), { instanceOf: ConfigError })!.message, /^resources\.cpu: /);
  t.throws(() => new Cluster(new InProcessBus(), { cluster: 'a.b' }), { instanceOf: ConfigError, message: /^cluster: "a\.b" is not a valid cluster name/ });
});

test('cluster options - init takes them once and the cluster uses them', async (t) => {
  await t.throwsAsync(init({ inProcess: true, deadAfter: 'later' }), { instanceOf: ConfigError, message: /^deadAfter: / });
  const rt = await init({ inProcess: true, heartbeat: '100ms', deadAfter: '3s', callTimeout: '5s', cluster: 'opts1' });
  try {
    t.is(rt.cluster.name, 'opts1');
    t.is(rt.mode, 'inproc');
    t.is((await rt.cluster.waitForNodes(1)).length, 1);
  } finally {
    await rt.shutdown();
  }
});
