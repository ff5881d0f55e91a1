import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));
export const HR1 = fileURLToPath(new URL('../../bin/hr1.js', import.meta.url));

export interface Proc {
  child: ChildProcess;
  out: () => string;
  exited: Promise<number | null>;
}

/** Run `hr1 …` as a child process, collecting its output. */
export function hr1(args: string[], env: NodeJS.ProcessEnv = {}): Proc {
  const child = spawn(process.execPath, [HR1, ...args], { cwd: ROOT, env: { ...process.env, HR1_NATS_USER: '', HR1_NATS_PASS: '', HR1_NATS_TOKEN: '', HR1_NATS_CREDS: '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let buf = '';
  child.stdout!.on('data', (d: Buffer) => (buf += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (buf += d.toString()));
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  return { child, out: () => buf, exited };
}

/** Wait until the process printed text matching `re`, or fail with what it printed. */
export async function waitFor(p: Proc, re: RegExp, ms = 20_000): Promise<string> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    const m = re.exec(p.out());
    if (m) return m[0];
    if (p.child.exitCode !== null) throw new Error(`process exited (${p.child.exitCode}) before printing ${re}: ${p.out()}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`timed out waiting for ${re}; output so far: ${p.out()}`);
}

/** Start an `hr1 node` process and wait until it joined. */
export async function startNode(address: string, cluster: string, extra: string[] = [], env: NodeJS.ProcessEnv = {}): Promise<Proc> {
  const p = hr1(['node', '--address', address, '--cluster', cluster, '--module', 'test/fixtures/actors.ts', '--heartbeat', '200ms', ...extra], env);
  // a busy 2-core machine (CI, or builds beside the tests) can take half a minute to start tsx and join
  await waitFor(p, /joined cluster/, 60_000);
  return p;
}

export async function stopAll(ps: Proc[]): Promise<void> {
  for (const p of ps) if (p.child.exitCode === null) p.child.kill('SIGKILL');
  await Promise.all(ps.map((p) => p.exited));
}
