/**
 * One process-wide registry of what to clean up when the process is told to stop: runtimes
 * (`init()`), embedded nats-servers, a hosting node. `init()` and `NatsServer.start()` register
 * themselves; a command registers what it owns beyond that.
 *
 * The CLI installs the signal handlers ({@link installSignalHandlers}): on SIGINT, SIGTERM or
 * SIGHUP the cleanups run once, newest first, within a bounded time (5 s, and 1 s more for those
 * a hung one kept waiting); then every child process still alive (a torch learner, a MariaDB, an
 * embedded nats-server whose cleanup did not finish) is sent SIGTERM and, a second later,
 * SIGKILL; then the process exits with 128 + the signal's number. A second signal exits at once (after SIGKILL to the children). Library users
 * that install nothing keep Node's default behaviour; the registry then only costs a Set.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { constants } from 'node:os';
import { spawnSync } from 'node:child_process';

/** How long the cleanups may take before the process exits anyway, in ms. @default 5000 */
export const SHUTDOWN_TIMEOUT_MS = 5000;
/** How long children get between SIGTERM and SIGKILL, in ms. @default 1000 */
export const CHILD_GRACE_MS = 1000;

export type Cleanup = () => unknown;
interface Entry {
  readonly name: string;
  readonly fn: Cleanup;
}

const entries = new Set<Entry>();
let stopping: Promise<void> | undefined;
let stopReason: string | undefined;

/**
 * Register a cleanup to run when the process is told to stop; returns the function that
 * unregisters it (call it once the thing is cleaned up the normal way).
 */
export function onShutdown(name: string, fn: Cleanup): () => void {
  const e: Entry = { name, fn };
  entries.add(e);
  return () => {
    entries.delete(e);
  };
}

/** The names of the registered cleanups, newest last (for tests and logs). */
export function pendingCleanups(): string[] {
  return [...entries].map((e) => e.name);
}

/** Whether a shutdown (by a signal, or {@link shutdownAndExit}) is under way. */
export function shutdownInProgress(): boolean {
  return stopping !== undefined;
}

/** Why the process is stopping (`SIGTERM`, `EPIPE`, …), or undefined. */
export function shutdownReason(): string | undefined {
  return stopReason;
}

/** What the cleanups not yet started when the budget ran out get, all at once, in ms. @default 1000 */
export const FINAL_GRACE_MS = 1000;

function bounded(e: Entry, ms: number): Promise<'ok' | 'failed' | 'timeout'> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    Promise.resolve()
      .then(e.fn)
      .then(() => 'ok' as const, () => 'failed' as const),
    new Promise<'timeout'>((resolve) => {
      timer = setTimeout(() => resolve('timeout'), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

/**
 * Run every registered cleanup once, newest first (a runtime before the server it runs on), each
 * within what is left of `timeoutMs`; those not started when it runs out (one hung) all start
 * then and get {@link FINAL_GRACE_MS} together, so a hung runtime does not keep its server
 * alive. Returns the names that threw and those that did not finish in time.
 */
export async function runCleanups(timeoutMs = SHUTDOWN_TIMEOUT_MS): Promise<{ failed: string[]; timedOut: string[] }> {
  const list = [...entries].reverse();
  entries.clear();
  const deadline = Date.now() + timeoutMs;
  const failed: string[] = [];
  const timedOut: string[] = [];
  const note = (e: Entry, r: 'ok' | 'failed' | 'timeout') => {
    if (r === 'failed') failed.push(e.name);
    else if (r === 'timeout') timedOut.push(e.name);
  };
  let i = 0;
  for (; i < list.length; i++) {
    const left = deadline - Date.now();
    if (left <= 0) break;
    note(list[i]!, await bounded(list[i]!, left));
  }
  const rest = list.slice(i);
  const results = await Promise.all(rest.map((e) => bounded(e, FINAL_GRACE_MS)));
  rest.forEach((e, k) => note(e, results[k]!));
  return { failed, timedOut };
}

/** Every live process's parent: Linux /proc; elsewhere `ps -A -o pid=,ppid=`. */
function parents(): Map<number, number> {
  const out = new Map<number, number>();
  try {
    for (const d of readdirSync('/proc')) {
      if (!/^\d+$/.test(d)) continue;
      let stat: string;
      try {
        stat = readFileSync(`/proc/${d}/stat`, 'utf8');
      } catch {
        continue;
      }
      // pid (comm) state ppid …; comm may hold spaces and parentheses: read after the last ')'
      const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (rest[0] !== 'Z') out.set(Number(d), Number(rest[1]));
    }
    return out;
  } catch {
    const r = spawnSync('ps', ['-A', '-o', 'pid=,ppid=,stat='], { encoding: 'utf8' });
    for (const l of (r.stdout ?? '').split('\n')) {
      const [p, pp, st] = l.trim().split(/\s+/);
      if (p && pp && !st?.startsWith('Z') && Number(p) !== r.pid) out.set(Number(p), Number(pp));
    }
    return out;
  }
}

/** The pids of this process's live child processes. */
export function childPids(pid = process.pid): number[] {
  return [...parents()].filter(([, pp]) => pp === pid).map(([p]) => p);
}

/** The pids of every live descendant of this process (children, their children, …), parents first. */
export function descendantPids(pid = process.pid): number[] {
  const kids = new Map<number, number[]>();
  for (const [p, pp] of parents()) kids.set(pp, [...(kids.get(pp) ?? []), p]);
  const out: number[] = [];
  const queue = [...(kids.get(pid) ?? [])];
  while (queue.length) {
    const p = queue.shift()!;
    out.push(p);
    queue.push(...(kids.get(p) ?? []));
  }
  return out;
}

function signalAll(pids: readonly number[], sig: NodeJS.Signals): void {
  for (const p of pids) {
    try {
      process.kill(p, sig);
    } catch {
      // gone already
    }
  }
}

/**
 * SIGTERM to every descendant process (a child's own children too: a shell's, a launcher's),
 * SIGKILL to those still alive after `graceMs`.
 */
export async function killChildren(graceMs = CHILD_GRACE_MS): Promise<void> {
  const first = descendantPids();
  if (!first.length) return;
  signalAll(first, 'SIGTERM');
  const end = Date.now() + graceMs;
  let left = first;
  while (Date.now() < end) {
    await new Promise((r) => setTimeout(r, 25));
    const live = new Set(parents().keys());
    left = first.filter((p) => live.has(p));
    if (!left.length) return;
  }
  // and whatever they started meanwhile
  signalAll([...new Set([...left, ...descendantPids()])], 'SIGKILL');
}

/**
 * Stop the process: run the cleanups (bounded by `timeoutMs`), stop the children, exit with
 * `code`. Called twice, the second call waits for the first. `reason` is what
 * {@link shutdownReason} then says.
 */
export function shutdownAndExit(code: number, reason: string, timeoutMs = SHUTDOWN_TIMEOUT_MS): Promise<void> {
  if (stopping) return stopping;
  stopReason = reason;
  process.exitCode = code;
  stopping = (async () => {
    // whatever hangs, the process goes: the cleanups' budget, the children's grace, a margin
    const guard = setTimeout(() => {
      signalAll(descendantPids(), 'SIGKILL');
      process.exit(code);
    }, timeoutMs + FINAL_GRACE_MS + CHILD_GRACE_MS + 1000);
    guard.unref();
    await runCleanups(timeoutMs);
    await killChildren();
    process.exit(code);
  })();
  return stopping;
}

/** The signals a long-running command stops on. */
export const STOP_SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;
export type StopSignal = (typeof STOP_SIGNALS)[number];

/** 128 + the signal's number: what a shell reports for a process the signal ended. */
export function signalExitCode(sig: StopSignal): number {
  return 128 + constants.signals[sig];
}

let installed = false;

/**
 * Install the handlers (once): the first SIGINT, SIGTERM or SIGHUP runs {@link shutdownAndExit}
 * with 128 + its number; a second one SIGKILLs the children and exits at once. `log` says what is
 * happening (stderr by default; write errors, e.g. a closed terminal after SIGHUP, are ignored).
 */
export function installSignalHandlers(opts: { timeoutMs?: number; log?: (line: string) => void } = {}): void {
  if (installed) return;
  installed = true;
  const log =
    opts.log ??
    ((l: string) => {
      try {
        process.stderr.write(`${l}\n`);
      } catch {
        // the terminal is gone (SIGHUP): nothing to tell
      }
    });
  for (const sig of STOP_SIGNALS) {
    process.on(sig, () => {
      const code = signalExitCode(sig);
      if (stopping) {
        signalAll(descendantPids(), 'SIGKILL');
        process.exit(code);
      }
      log(`hr1: ${sig}: stopping (cleaning up for at most ${((opts.timeoutMs ?? SHUTDOWN_TIMEOUT_MS) / 1000).toFixed(0)} s; a second signal exits at once)`);
      void shutdownAndExit(code, sig, opts.timeoutMs);
    });
  }
}
