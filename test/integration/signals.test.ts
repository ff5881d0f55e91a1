/**
 * D4: SIGTERM, SIGINT and SIGHUP to a long-running command leave no child process and no temp
 * folder (cluster/signals.ts); with --address the driver's actors are killed on the node; even a
 * SIGKILL of the command leaves no embedded nats-server (its watchdog, cluster/nats-server.ts);
 * `hr1 status | head -1` ends quietly. Each run gets its own TMPDIR, so what is left of it is
 * what `ps` shows mentioning that folder and what the folder holds.
 */
import test from 'ava';
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { constants, tmpdir } from 'node:os';
import { join } from 'node:path';
import { NatsBus } from '../../cluster/bus-nats.ts';
import { Cluster } from '../../cluster/client.ts';
import { NatsServer } from '../../cluster/nats-server.ts';
import { HR1, ROOT, hr1, startNode, stopAll, waitFor, type Proc } from './processes.ts';
import { alive, descendantsOf, pollUntil, processesMentioning } from './security-helpers.ts';

const STACK = /^\s+at /m;
const EVAL = ['eval', '--env', 'alfworld', '--target', 'sim/qwen-8b', '--tasks', '100', '--seeds', '1-10', '--no-cache', '--no-progress'];

const dirs: string[] = [];
test.after.always(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});
function freshTmp(): string {
  const d = mkdtempSync(join(tmpdir(), 'hr1-sigtest-'));
  dirs.push(d);
  return d;
}

const natsFolders = (dir: string) => readdirSync(dir).filter((f) => f.startsWith('hr1-nats-'));

/** Wait until the cluster at `url` has a node hosting a TargetActor (the rollout is under way). */
async function waitForTargetActor(url: string, cluster: string): Promise<void> {
  const bus = await NatsBus.connect({ address: url });
  const c = new Cluster(bus, { cluster });
  try {
    const ok = await pollUntil(async () => (await c.status(300)).some((n) => n.actors.some((a) => a.cls === 'TargetActor')), 90_000, 200);
    if (!ok) throw new Error('no TargetActor appeared');
  } finally {
    await c.close();
    await bus.close();
  }
}

/** `hr1 eval` on its embedded cluster with its own TMPDIR, once its rollout runs. */
async function runningEval(tmp: string, extra: string[] = []): Promise<Proc> {
  const p = hr1([...EVAL, ...extra], { TMPDIR: tmp });
  const line = await waitFor(p, /private nats-server at nats:\/\/127\.0\.0\.1:\d+/, 90_000);
  t0Check(tmp);
  await waitForTargetActor(line.slice(line.indexOf('nats://')), 'default');
  return p;
}

function t0Check(tmp: string): void {
  if (!processesMentioning(tmp).some((l) => l.includes('nats-server'))) throw new Error(`no embedded nats-server under ${tmp}`);
}

for (const sig of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) {
  test.serial(`signals - ${sig} to hr1 eval on the embedded cluster: exits ${128 + constants.signals[sig]}, no nats-server left, no hr1-nats-* folder`, async (t) => {
    const tmp = freshTmp();
    const p = await runningEval(tmp);
    t.true(natsFolders(tmp).length === 1, 'the embedded server\'s folder exists while it runs');
    const tree = descendantsOf(p.child.pid!);
    t.true(tree.length >= 1, 'the nats-server (and its watchdog) run under hr1');
    p.child.kill(sig);
    const code = await p.exited;
    t.is(code, 128 + constants.signals[sig], p.out());
    t.regex(p.out(), new RegExp(`hr1: ${sig}: stopping`));
    t.notRegex(p.out(), STACK);
    t.true(await pollUntil(() => processesMentioning(tmp).length === 0, 10_000), `left: ${processesMentioning(tmp).join('\n')}`);
    t.deepEqual(tree.filter(alive), [], 'no process hr1 had started is alive');
    t.deepEqual(natsFolders(tmp), []);
  });
}

test.serial('signals - SIGTERM to hr1 eval whose module started child processes that ignore SIGTERM (a stand-in for a torch learner), one with a child of its own: none is left', async (t) => {
  const tmp = freshTmp();
  const mod = join(tmp, 'stubborn.mjs');
  const pids = join(tmp, 'stubborn.pids');
  // two direct children that ignore SIGTERM/SIGINT/SIGHUP, the second with a grandchild
  writeFileSync(
    mod,
    `import { spawn } from 'node:child_process';\nimport { appendFileSync } from 'node:fs';\n` +
      `for (const script of ["trap '' TERM INT HUP; sleep 3917", "trap '' TERM INT HUP; sleep 3918 & wait"]) {\n` +
      `  const c = spawn('sh', ['-c', script], { stdio: 'ignore' });\n  appendFileSync(${JSON.stringify(pids)}, c.pid + '\\n');\n}\n`,
  );
  const p = await runningEval(tmp, ['--module', mod]);
  const tree = descendantsOf(p.child.pid!);
  const started = readdirSync(tmp).includes('stubborn.pids');
  t.true(started, 'the module ran');
  t.true(tree.length >= 5, `nats-server, its watchdog, two shells, a sleep: ${tree.join(' ')}`);
  p.child.kill('SIGTERM');
  t.is(await p.exited, 143, p.out());
  t.true(await pollUntil(() => tree.every((pid) => !alive(pid)), 10_000), `left: ${tree.filter(alive).join(' ')}`);
  t.deepEqual(natsFolders(tmp), []);
});

// the other long-running commands: the same handlers (installed by the CLI for every command)
const OTHERS: { name: string; sig: 'SIGINT' | 'SIGHUP' | 'SIGTERM'; args: (tmp: string) => string[]; running: RegExp }[] = [
  { name: 'hr1 exp main', sig: 'SIGINT', args: (tmp) => ['exp', 'main', '--envs', 'alfworld,dbbench,webshop', '--methods', 'vanilla,react,self-refine,prompted-editor', '--out', join(tmp, 'run')], running: /hr1 exp main: embedded cluster/ },
  { name: 'hr1 bench cluster', sig: 'SIGHUP', args: () => ['bench', 'cluster', '--seconds', '30'], running: /bench cluster: NATS at .*private nats-server/ },
  { name: 'hr1 serve', sig: 'SIGTERM', args: () => ['serve', 'sim/qwen-3b', '--env', 'alfworld', '--port', '0'], running: /OpenAI-compatible/ },
];
for (const o of OTHERS) {
  test.serial(`signals - ${o.sig} to ${o.name}: exits ${128 + constants.signals[o.sig]}, no process it started is left, no hr1-nats-* folder`, async (t) => {
    const tmp = freshTmp();
    const p = hr1(o.args(tmp), { TMPDIR: tmp });
    await waitFor(p, o.running, 90_000);
    const tree = descendantsOf(p.child.pid!);
    p.child.kill(o.sig);
    t.is(await p.exited, 128 + constants.signals[o.sig], p.out());
    t.notRegex(p.out(), STACK);
    t.true(await pollUntil(() => tree.every((pid) => !alive(pid)) && processesMentioning(tmp).length === 0, 10_000), `left: ${processesMentioning(tmp).join('\n')}`);
    t.deepEqual(natsFolders(tmp), []);
  });
}

test.serial('signals - a second SIGTERM exits at once, and still leaves nothing', async (t) => {
  const tmp = freshTmp();
  const p = await runningEval(tmp);
  p.child.kill('SIGTERM');
  await new Promise((r) => setTimeout(r, 20));
  p.child.kill('SIGTERM');
  t.is(await p.exited, 143);
  t.true(await pollUntil(() => processesMentioning(tmp).length === 0, 10_000), `left: ${processesMentioning(tmp).join('\n')}`);
  t.deepEqual(natsFolders(tmp), []);
});

test.serial('signals - SIGKILL to hr1 eval: the embedded nats-server dies with it (watchdog) and its folder goes', async (t) => {
  const tmp = freshTmp();
  const p = await runningEval(tmp);
  const server = processesMentioning(tmp).find((l) => l.includes('nats-server') && !l.includes('watchdog'))!;
  const serverPid = Number(server.split(' ')[0]);
  p.child.kill('SIGKILL');
  await p.exited;
  t.true(await pollUntil(() => !alive(serverPid) && processesMentioning(tmp).length === 0, 20_000), `left: ${processesMentioning(tmp).join('\n')}`);
  t.true(await pollUntil(() => natsFolders(tmp).length === 0, 10_000), natsFolders(tmp).join(', '));
});

test.serial('signals - SIGTERM to hr1 eval --address: its actors are killed on the node, the node lives on', async (t) => {
  const server = await NatsServer.start();
  const procs: Proc[] = [];
  try {
    const node = await startNode(server.url, 'sig', ['--node-id', 'sig-n0']);
    procs.push(node);
    const tmp = freshTmp();
    const ev = hr1([...EVAL, '--address', server.url, '--cluster', 'sig'], { TMPDIR: tmp });
    procs.push(ev);
    await waitFor(ev, /connected to NATS at/, 90_000);
    await waitForTargetActor(server.url, 'sig');
    ev.child.kill('SIGTERM');
    t.is(await ev.exited, 143, ev.out());
    const bus = await NatsBus.connect({ address: server.url });
    const c = new Cluster(bus, { cluster: 'sig' });
    try {
      const nodes = await c.status(1000);
      t.deepEqual(nodes.map((n) => n.nodeId), ['sig-n0'], 'the node lives on');
      t.deepEqual(nodes[0]!.actors.filter((a) => a.cls === 'TargetActor'), [], 'no TargetActor left on the node');
    } finally {
      await c.close();
      await bus.close();
    }
    t.is(node.child.exitCode, null);
    t.deepEqual(processesMentioning(tmp), []);
    // the node itself on SIGTERM: stops its actors and exits 143
    node.child.kill('SIGTERM');
    t.is(await node.exited, 143, node.out());
    t.regex(node.out(), /\[node\] stopping \d+ actor\(s\)/);
  } finally {
    await stopAll(procs);
    await server.dispose();
  }
});

/** Run `sh -c script` from the repo root; resolve with its stdout. */
function sh(script: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const c = spawn('bash', ['-c', script], { cwd: ROOT, env: { ...process.env, HR1_NATS_USER: '', HR1_NATS_PASS: '' }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    c.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    c.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    c.once('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

test.serial('signals - hr1 status piped into head -1 (or a reader that is gone) ends quietly with exit code 0, no EPIPE stack', async (t) => {
  const server = await NatsServer.start({ jetstream: false });
  const procs: Proc[] = [];
  try {
    procs.push(await startNode(server.url, 'pipe', ['--node-id', 'pipe-n0']));
    const status = `node ${JSON.stringify(HR1)} status --address ${server.url} --cluster pipe`;
    const err = join(freshTmp(), 'stderr.txt');
    // head reads the first line and leaves: the next write of hr1 status meets EPIPE
    const head = await sh(`${status} 2>${err} | head -1; echo "exit=\${PIPESTATUS[0]}"; cat ${err}`);
    t.regex(head.stdout, /^cluster "pipe" at nats:\/\/127\.0\.0\.1:\d+: 1 node\(s\).*\nexit=0\n$/, head.stdout);
    // a reader that exits at once: every write meets EPIPE
    const gone = await sh(`${status} 2>${err} | true; echo "exit=\${PIPESTATUS[0]}"; cat ${err}`);
    t.regex(gone.stdout, /^exit=0\n$/, gone.stdout);
    for (const r of [head, gone]) {
      t.notRegex(r.stdout + r.stderr, /EPIPE|Error|unexpected/);
      t.notRegex(r.stdout + r.stderr, STACK);
    }
  } finally {
    await stopAll(procs);
    await server.dispose();
  }
});

test.serial('signals - the process exits while NatsServer.dispose() waits for the server (a second signal in that window): the server and its folder still go', async (t) => {
  const tmp = freshTmp();
  const script = join(tmp, 'exit-mid-stop.mts');
  // dispose() has killed the watchdog and sent SIGTERM; the exit comes before the server is seen to exit
  writeFileSync(
    script,
    `import { NatsServer } from ${JSON.stringify(join(ROOT, 'cluster/nats-server.ts'))};\n` +
      `const s = await NatsServer.start();\nconsole.log('dir=' + s.dir);\nvoid s.dispose();\nprocess.exit(7);\n`,
  );
  const out = await new Promise<{ code: number | null; stdout: string }>((resolve) => {
    const c = spawn(process.execPath, ['--import', 'tsx', script], { cwd: ROOT, env: { ...process.env, TMPDIR: tmp }, stdio: ['ignore', 'pipe', 'inherit'] });
    let stdout = '';
    c.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    c.once('exit', (code) => resolve({ code, stdout }));
  });
  t.is(out.code, 7);
  t.regex(out.stdout, /dir=.*hr1-nats-/);
  t.true(await pollUntil(() => processesMentioning(tmp).length === 0, 10_000), `left: ${processesMentioning(tmp).join('\n')}`);
  t.deepEqual(natsFolders(tmp), []);
});
