/**
 * cluster/signals.ts in-process: the cleanup registry (newest first, each bounded, failures and
 * hangs isolated, unregistering), the child-process sweep, the exit codes. The signal handlers
 * and process exit are tested on the real CLI in test/integration/signals.test.ts.
 */
import test from 'ava';
import { spawn } from 'node:child_process';
import { childPids, descendantPids, killChildren, onShutdown, pendingCleanups, runCleanups, signalExitCode } from '../../cluster/signals.ts';
import { init } from '../../cluster/init.ts';

test.serial('shutdown registry - cleanups run once, newest first; a throw or a hang does not stop the others', async (t) => {
  const ran: string[] = [];
  onShutdown('first', () => {
    ran.push('first');
  });
  onShutdown('hangs', () => new Promise(() => {}));
  onShutdown('throws', () => {
    ran.push('throws');
    throw new Error('boom');
  });
  const gone = onShutdown('unregistered', () => {
    ran.push('unregistered');
  });
  onShutdown('last', async () => {
    await new Promise((r) => setTimeout(r, 10));
    ran.push('last');
  });
  gone();
  const r = await runCleanups(500);
  // the hang used the budget; what came after it still ran, in the final grace
  t.deepEqual(ran, ['last', 'throws', 'first']);
  t.deepEqual(r.failed, ['throws']);
  t.deepEqual(r.timedOut, ['hangs']);
  t.deepEqual(pendingCleanups(), []);
  const again = await runCleanups(100);
  t.deepEqual(again, { failed: [], timedOut: [] }, 'once');
});

test.serial('shutdown registry - a runtime registers its shutdown and unregisters when shut down the normal way', async (t) => {
  const rt = await init({ inProcess: true });
  t.true(pendingCleanups().some((n) => n.startsWith('cluster runtime')));
  await Promise.all([rt.shutdown(), rt.shutdown()]);
  t.false(pendingCleanups().some((n) => n.startsWith('cluster runtime')));
});

test.serial('shutdown registry - the child sweep finds this process\'s children and stops them; exit codes are 128 + the signal', async (t) => {
  const c = spawn('sleep', ['30'], { stdio: 'ignore' });
  const exited = new Promise<NodeJS.Signals | null>((r) => c.once('exit', (_code, sig) => r(sig)));
  await new Promise((r) => c.once('spawn', r));
  t.true(childPids().includes(c.pid!));
  await killChildren(2000);
  t.is(await exited, 'SIGTERM');
  t.false(childPids().includes(c.pid!));
  // a child that ignores SIGTERM, with a grandchild that does too: SIGKILL after the grace, both
  const stubborn = spawn('sh', ['-c', "trap '' TERM; sleep 37 & wait"], { stdio: 'ignore' });
  const gone = new Promise<NodeJS.Signals | null>((r) => stubborn.once('exit', (_code, sig) => r(sig)));
  let tree: number[] = [];
  for (let i = 0; i < 100 && tree.length < 2; i++) {
    await new Promise((r) => setTimeout(r, 20));
    tree = descendantPids();
  }
  t.is(tree.length, 2, 'the shell and its sleep');
  t.is(tree[0], stubborn.pid, 'parents first');
  await killChildren(300);
  t.is(await gone, 'SIGKILL');
  const isAlive = (p: number) => {
    try {
      process.kill(p, 0);
      return true;
    } catch {
      return false;
    }
  };
  for (let i = 0; i < 100 && tree.some(isAlive); i++) await new Promise((r) => setTimeout(r, 50));
  t.deepEqual(tree.filter(isAlive), [], 'the grandchild too');
  t.is(signalExitCode('SIGINT'), 130);
  t.is(signalExitCode('SIGTERM'), 143);
  t.is(signalExitCode('SIGHUP'), 129);
});
