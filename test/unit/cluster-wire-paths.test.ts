/**
 * What crosses the wire names no absolute local path: a remote stack's frames are relative to
 * the project root (`cluster/node.ts:123:9`), or start with `~/` under the home directory.
 */
import { homedir } from 'node:os';
import { fileURLToPath } from 'node:url';
import test from 'ava';
import { InProcessBus } from '../../cluster/bus-inproc.ts';
import { Cluster } from '../../cluster/client.ts';
import { ActorInitError, ActorTaskError, Hr1Error, relativeStack, toWire } from '../../cluster/errors.ts';
import { ClusterNode } from '../../cluster/node.ts';
import { Counter, Fragile } from '../fixtures/actors.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const HOME = `${homedir()}/`;

function noAbsolutePaths(t: import('ava').ExecutionContext, stack: string | undefined): void {
  t.truthy(stack);
  t.false(stack!.includes(ROOT), stack);
  t.false(stack!.includes('file:///'), stack);
  if (HOME.length > 2) t.false(stack!.includes(HOME), stack);
}

test('wire paths - relativeStack makes project paths relative and home paths ~/, in both plain and file:// form', (t) => {
  const stack = [
    'Error: boom',
    `    at run (${ROOT}cluster/node.ts:221:9)`,
    `    at file://${ROOT}test/fixtures/actors.ts:23:13`,
    `    at load (${HOME}.cache/thing/index.js:1:2)`,
    `    at file://${HOME}other/x.mjs:3:4`,
    '    at process.processTicksAndRejections (node:internal/process/task_queues:95:5)',
  ].join('\n');
  const out = relativeStack(stack)!;
  t.true(out.includes('at run (cluster/node.ts:221:9)'), out);
  t.true(out.includes('at test/fixtures/actors.ts:23:13'), out);
  if (!ROOT.startsWith(HOME) || ROOT === HOME) {
    t.true(out.includes('(~/.cache/thing/index.js:1:2)'), out);
    t.true(out.includes('at ~/other/x.mjs:3:4'), out);
  }
  t.true(out.includes('node:internal/process/task_queues:95:5'), 'other frames are kept');
  noAbsolutePaths(t, out);
  t.is(relativeStack(out), out, 'idempotent');
  t.is(relativeStack(undefined), undefined);
});

test('wire paths - toWire of a plain Error and of an Hr1Error carries a relative remoteStack', (t) => {
  const plain = toWire(new Error('plain'), 'ACTOR_TASK');
  noAbsolutePaths(t, plain.remoteStack);
  t.regex(plain.remoteStack!, /test\/unit\/cluster-wire-paths\.test\.ts:\d+:\d+/);
  const own = new Hr1Error('X', 'own').toWire();
  noAbsolutePaths(t, own.remoteStack);
  t.regex(own.remoteStack!, /test\/unit\/cluster-wire-paths\.test\.ts:\d+:\d+/);
  // the error itself keeps its local stack; only its wire form is rewritten
  const e = new Error('local');
  toWire(e, 'ACTOR_TASK');
  t.true(e.stack!.includes(ROOT) || e.stack!.includes('file://'));
});

test('wire paths - a handler that throws and a constructor that throws: the caller sees relative paths', async (t) => {
  const bus = new InProcessBus();
  const node = new ClusterNode(bus, { cluster: 'paths', nodeId: 'p0' });
  const c = new Cluster(bus, { cluster: 'paths' });
  try {
    await c.waitForNodes(1, 5000);
    const h = await c.spawn(Counter);
    const e = await t.throwsAsync(h.fail('from the handler'), { instanceOf: ActorTaskError });
    noAbsolutePaths(t, e!.remoteStack);
    t.regex(e!.remoteStack!, /test\/fixtures\/actors\.ts:\d+/);
    const ie = await t.throwsAsync(c.spawn(Fragile, { throwInCreate: true }), { instanceOf: ActorInitError });
    noAbsolutePaths(t, ie!.remoteStack);
    t.regex(ie!.remoteStack!, /test\/fixtures\/actors\.ts:\d+/);
  } finally {
    await c.close({ killOwned: true });
    await node.stop();
    await bus.close();
  }
});
