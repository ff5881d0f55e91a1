/**
 * The code-hook sandbox: QuickJS compiled to WebAssembly (quickjs-emscripten). A hook runs in its
 * own QuickJS runtime with a memory cap, a stack cap, and a budget per call in deterministic fuel:
 * whether a call "timed out" never depends on the machine's speed or load. A wall-clock guard
 * (far above what the fuel allows on any sane machine) stops a call that would hang the host; when
 * it fires the result is an infra error (outcome kind 'wallclock'; the episode ends as
 * `sandbox_error` and is run again), never a different episode. The guard does not fire on a host
 * that is only busy: while this process has used less CPU than the guard since the call began, the
 * call is starved rather than slow and the guard waits, up to STARVED_GUARD_FACTOR × the guard.
 * It sees only what is passed in as JSON: no process, require, timers, fetch, WebAssembly or host
 * objects; inside it, Date is frozen at 0 and Math.random is seeded.
 */
import { RELEASE_SYNC, newQuickJSWASMModuleFromVariant, newVariant, type QuickJSContext, type QuickJSHandle, type QuickJSRuntime, type QuickJSWASMModule } from 'quickjs-emscripten';
import { HarnessError, errorText, wallGuardError } from './errors.ts';

/**
 * wall-clock guard of one hook call (or compile), in ms: not a budget (the fuel is), a guard
 * against a call that would hang the host. When it fires the call's outcome is 'wallclock', an
 * infra error: the episode is not a result and is run again. @default 10_000
 */
export const DEFAULT_WALL_GUARD_MS = 10_000;
/**
 * how far past the guard a starved call may run, as a multiple of it: when the guard's time is up
 * but this process has used less CPU than the guard since the call began (other processes had the
 * cores: a busy CI machine), the deadline moves on by the CPU still unused, and the guard fires
 * regardless at this multiple. @default 6 (60 s of wall clock at the default guard)
 */
export const STARVED_GUARD_FACTOR = 6;

/** the clocks the guard reads, ms; injectable so the starvation rule can be tested */
export interface SandboxClock {
  /** monotonic wall clock */
  wall(): number;
  /** CPU time of this process (all its threads, user + system) */
  cpu(): number;
}

// process.cpuUsage() is a system call (about 2 µs, a tenth of a small hook call); a reading less
// than 1 ms old is reused, which makes `used` at most 1 ms too large against a guard of seconds
let cpuAt = -Infinity;
let cpuMs = 0;
export const HOST_CLOCK: SandboxClock = {
  wall: () => performance.now(),
  cpu: () => {
    const now = performance.now();
    if (now - cpuAt >= 1) {
      const u = process.cpuUsage();
      cpuMs = (u.user + u.system) / 1000;
      cpuAt = now;
    }
    return cpuMs;
  },
};
/**
 * the budget of one call, deterministic: ticks of 10,000 QuickJS interrupt polls (backward jumps
 * and calls), so 400,000 polls by default: enough for a hook that compares a proposal with every
 * admissible action character by character. A tick takes 0.1 ms (empty loop) to 60 ms (a loop of
 * JSON.stringify/parse of 1 kB) here, so a runaway call is stopped after 4 ms to 2.4 s, at the
 * same point on every machine and under any load. @default 40
 */
export const DEFAULT_FUEL_TICKS = 40;
/** memory cap of one hook's runtime, @default 16 MiB */
export const DEFAULT_MEMORY_BYTES = 16 * 1024 * 1024;
/**
 * QuickJS stack cap, @default 64 KiB (≈ 370 frames). QuickJS's frames also use the host's native
 * stack through WebAssembly; larger caps let deep recursion exhaust Node's stack first.
 */
export const DEFAULT_STACK_BYTES = 64 * 1024;
/**
 * WebAssembly memory of the shared QuickJS module, all hooks together, @default 256 MiB. This is
 * the hard memory bound: QuickJS's per-runtime cap (memoryBytes) is approximate in this build
 * (malloc_usable_size is unavailable, so growth by realloc goes uncounted).
 */
export const DEFAULT_MODULE_MEMORY_BYTES = 256 * 1024 * 1024;
/** longest JSON a call may return (effect + notebook), @default 65536 */
export const DEFAULT_MAX_RESULT_CHARS = 65536;

export interface SandboxLimits {
  /** @default DEFAULT_WALL_GUARD_MS */
  wallGuardMs: number;
  /** @default DEFAULT_FUEL_TICKS */
  fuelTicks: number;
  /** @default DEFAULT_MEMORY_BYTES */
  memoryBytes: number;
  /** @default DEFAULT_STACK_BYTES */
  stackBytes: number;
  /** @default DEFAULT_MAX_RESULT_CHARS */
  maxResultChars: number;
}

export const DEFAULT_LIMITS: SandboxLimits = {
  wallGuardMs: DEFAULT_WALL_GUARD_MS,
  fuelTicks: DEFAULT_FUEL_TICKS,
  memoryBytes: DEFAULT_MEMORY_BYTES,
  stackBytes: DEFAULT_STACK_BYTES,
  maxResultChars: DEFAULT_MAX_RESULT_CHARS,
};

export function resolveLimits(l: Partial<SandboxLimits> = {}): SandboxLimits {
  const out = { ...DEFAULT_LIMITS, ...l };
  for (const [k, v] of Object.entries(out)) {
    if (typeof v !== 'number' || !Number.isFinite(v) || v <= 0) {
      throw new HarnessError('HARNESS_BAD_OPTION', `sandbox.${k} must be a positive number (got ${String(v)})`, { option: `sandbox.${k}`, value: v });
    }
  }
  if (out.stackBytes > 256 * 1024) {
    throw new HarnessError('HARNESS_BAD_OPTION', `sandbox.stackBytes must be at most 262144: deeper QuickJS stacks exhaust Node's own stack (got ${out.stackBytes})`, { option: 'sandbox.stackBytes', value: out.stackBytes });
  }
  return out;
}

// ---------------------------------------------------------------- the WebAssembly module

let modulePromise: Promise<QuickJSWASMModule> | null = null;

/** the shared QuickJS module (loaded once, ~15 ms); a fresh one after a host-level fault */
export function sandboxModule(): Promise<QuickJSWASMModule> {
  if (!modulePromise) {
    const pages = DEFAULT_MODULE_MEMORY_BYTES / 65536;
    // tsconfig has no DOM lib; WebAssembly is a Node global
    const WA = (globalThis as unknown as { WebAssembly: { Memory: new (d: { initial: number; maximum: number }) => object } }).WebAssembly;
    const wasmMemory = new WA.Memory({ initial: 256, maximum: pages }) as Parameters<typeof newVariant>[1] extends { wasmMemory?: infer M } ? Exclude<M, () => unknown> : never;
    modulePromise = newQuickJSWASMModuleFromVariant(newVariant(RELEASE_SYNC, { wasmMemory })).catch((e: unknown) => {
      modulePromise = null;
      throw new HarnessError('HARNESS_SANDBOX_UNAVAILABLE', `cannot load QuickJS (quickjs-emscripten): ${errorText(e)}; reinstall dependencies with npm install`, {}, { cause: e });
    });
  }
  return modulePromise;
}

/** drop the module after a host-level fault inside it; later sandboxes load a fresh instance */
function poisonModule(m: QuickJSWASMModule): void {
  void modulePromise?.then((cur) => {
    if (cur === m) modulePromise = null;
  });
}

// ---------------------------------------------------------------- one hook's sandbox

export type CallOutcome =
  | { kind: 'ok'; value: unknown; nb: unknown }
  | { kind: 'threw'; error: string }
  | { kind: 'timeout'; error: string }
  | { kind: 'oom'; error: string }
  /** the wall-clock guard fired (a loaded or stalled host, not the hook's budget): an infra error */
  | { kind: 'wallclock'; error: string }
  | { kind: 'malformed'; error: string }
  /** the sandbox itself failed (a host-level fault); it is gone */
  | { kind: 'crashed'; error: string };

// the prelude runs before the hook's source: fixes time and randomness, and keeps its own copies of
// the builtins the runner uses, so the hook cannot swap them
const PRELUDE = (seed: number, maxChars: number): string => `(function () {
  'use strict';
  const g = globalThis;
  let s = ${seed >>> 0};
  const random = function random() {
    s = (s + 0x6d2b79f5) | 0;
    let t = Math.imul(s ^ (s >>> 15), 1 | s);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  Object.defineProperty(Math, 'random', { value: random, writable: false, configurable: false });
  const D = g.Date;
  const FD = function Date(...a) { if (!new.target) return new D(0).toString(); return a.length ? new D(...a) : new D(0); };
  FD.prototype = D.prototype;
  FD.now = () => 0; FD.UTC = D.UTC; FD.parse = D.parse;
  g.Date = FD;
  const parse = JSON.parse, stringify = JSON.stringify, freeze = Object.freeze, keys = Object.keys;
  // the top level and its direct children are frozen (a fresh copy per call, so deeper writes
  // change nothing outside this call); a full deep freeze doubled the cost of a call
  const freeze2 = (o) => {
    freeze(o);
    const ks = keys(o);
    for (let i = 0; i < ks.length; i++) { const v = o[ks[i]]; if (v !== null && typeof v === 'object') freeze(v); }
    return o;
  };
  return function run(hook, ctxJson, nbJson) {
    const ctx = freeze2(parse(ctxJson));
    const nb = parse(nbJson);
    let r = hook(ctx, nb);
    if (r === undefined) r = null;
    const t = typeof r;
    if (t === 'function' || t === 'symbol' || t === 'bigint') return '!bad-type:' + t;
    const out = stringify([r, nb]);
    if (typeof out !== 'string') return '!unserialisable';
    return out.length > ${maxChars} ? '!too-big:' + out.length : out;
  };
})()`;

function classify(vm: QuickJSContext, h: QuickJSHandle, wall: boolean, guardMs: number): { kind: 'threw' | 'timeout' | 'oom' | 'wallclock'; error: string } {
  let d: unknown;
  try {
    d = vm.dump(h);
  } catch (e) {
    d = e;
  }
  let msg = errorText(d);
  const stack = typeof d === 'object' && d !== null ? String((d as { stack?: unknown }).stack ?? '') : '';
  const at = /hook\.js:\d+:\d+/.exec(stack);
  if (at) msg += ` (at ${at[0]})`;
  if (/\binterrupted\b/.test(msg)) {
    if (wall) return { kind: 'wallclock', error: `the wall-clock guard (${guardMs} ms) fired before the fuel ran out: the host is overloaded or stalled` };
    return { kind: 'timeout', error: 'fuel budget exceeded (interrupted)' };
  }
  if (/out of memory|stack overflow|Maximum call stack|string too long|invalid array length/i.test(msg)) return { kind: 'oom', error: msg };
  return { kind: 'threw', error: msg };
}

export interface CompileResult {
  ok: boolean;
  sandbox?: CodeSandbox;
  /** the sandbox's own words: a syntax error with its line, a missing hook, a timeout */
  error?: string;
  /** the wall-clock guard fired while compiling: an infra error, not a verdict on the source */
  wallclock?: boolean;
}

/** One code hook, compiled in its own QuickJS runtime. Call `dispose()` when the episode ends. */
export class CodeSandbox {
  private rt: QuickJSRuntime | null;
  private vm: QuickJSContext | null;
  private runner: QuickJSHandle | null = null;
  private hook: QuickJSHandle | null = null;
  private deadline = 0;
  /** wall and process-CPU clock when the call began */
  private armedWall = 0;
  private armedCpu = 0;
  private ticks = 0;
  /** the last interrupt came from the wall-clock guard, not the fuel */
  private wallFired = false;
  private readonly limits: SandboxLimits;
  private readonly module: QuickJSWASMModule;
  private readonly clock: SandboxClock;

  private constructor(module: QuickJSWASMModule, limits: SandboxLimits, clock: SandboxClock) {
    this.module = module;
    this.limits = limits;
    this.clock = clock;
    this.rt = module.newRuntime();
    this.rt.setMemoryLimit(limits.memoryBytes);
    this.rt.setMaxStackSize(limits.stackBytes);
    this.rt.setInterruptHandler(() => {
      this.ticks++;
      if (this.ticks > this.limits.fuelTicks) return true;
      const now = this.clock.wall();
      if (now > this.deadline) {
        // starved, not slow: the process has not had the guard's CPU since the call began, so this
        // call has not either; wait for the CPU still unused (bounded by STARVED_GUARD_FACTOR)
        const used = this.clock.cpu() - this.armedCpu;
        const hardStop = this.armedWall + this.limits.wallGuardMs * STARVED_GUARD_FACTOR;
        if (used < this.limits.wallGuardMs && now < hardStop) {
          this.deadline = Math.min(hardStop, now + Math.max(10, this.limits.wallGuardMs - used));
          return false;
        }
        this.wallFired = true;
        return true;
      }
      return false;
    });
    this.vm = this.rt.newContext();
  }

  /** compile `source` (which must define `function hook(ctx, nb)`); never throws for bad source */
  static async compile(source: string, opts: { seed?: number; limits?: Partial<SandboxLimits>; clock?: SandboxClock } = {}): Promise<CompileResult> {
    const limits = resolveLimits(opts.limits);
    return CodeSandbox.compileWith(await sandboxModule(), source, { seed: opts.seed ?? 0, limits, ...(opts.clock ? { clock: opts.clock } : {}) });
  }

  /** compile with an already loaded module (synchronous; used to restart a hook after a fault) */
  static compileWith(module: QuickJSWASMModule, source: string, opts: { seed: number; limits: SandboxLimits; clock?: SandboxClock }): CompileResult {
    const limits = opts.limits;
    let sb: CodeSandbox | null = null;
    try {
      sb = new CodeSandbox(module, limits, opts.clock ?? HOST_CLOCK);
      const vm = sb.vm as QuickJSContext;
      sb.arm();
      const pre = vm.evalCode(PRELUDE(opts.seed, limits.maxResultChars), 'prelude.js');
      if (pre.error) {
        const c = sb.classify(pre.error);
        pre.error.dispose();
        sb.dispose();
        return { ok: false, error: `prelude failed: ${c.error}`, ...(c.kind === 'wallclock' ? { wallclock: true } : {}) };
      }
      sb.runner = pre.value;
      sb.arm();
      const r = vm.evalCode(source, 'hook.js');
      if (r.error) {
        const c = sb.classify(r.error);
        r.error.dispose();
        sb.dispose();
        return { ok: false, error: c.kind === 'timeout' ? 'top-level code ran past the fuel budget; define hook() and do the work inside it' : c.error, ...(c.kind === 'wallclock' ? { wallclock: true } : {}) };
      }
      r.value.dispose();
      const h = vm.getProp(vm.global, 'hook');
      if (vm.typeof(h) !== 'function') {
        h.dispose();
        sb.dispose();
        return { ok: false, error: 'the source does not define a function named hook; write `function hook(ctx, nb) { ... }`' };
      }
      sb.hook = h;
      return { ok: true, sandbox: sb };
    } catch (e) {
      poisonModule(module);
      sb?.dispose();
      return { ok: false, error: `sandbox fault while compiling: ${errorText(e)}` };
    }
  }

  private arm(): void {
    this.ticks = 0;
    this.wallFired = false;
    this.armedWall = this.clock.wall();
    this.armedCpu = this.clock.cpu();
    this.deadline = this.armedWall + this.limits.wallGuardMs;
  }

  private classify(h: QuickJSHandle): ReturnType<typeof classify> {
    return classify(this.vm as QuickJSContext, h, this.wallFired, this.limits.wallGuardMs);
  }

  get moduleRef(): QuickJSWASMModule {
    return this.module;
  }

  get alive(): boolean {
    return this.vm !== null;
  }

  /** call the hook with ctx and notebook as JSON text; returns what happened, never throws */
  call(ctxJson: string, nbJson: string): CallOutcome {
    const vm = this.vm;
    if (!vm || !this.runner || !this.hook) return { kind: 'crashed', error: 'sandbox disposed' };
    try {
      this.arm();
      const a = vm.newString(ctxJson);
      const b = vm.newString(nbJson);
      const r = vm.callFunction(this.runner, vm.undefined, this.hook, a, b);
      a.dispose();
      b.dispose();
      if (r.error) {
        const c = this.classify(r.error);
        r.error.dispose();
        return c;
      }
      const h = r.value;
      const t = vm.typeof(h);
      const s = t === 'string' ? vm.getString(h) : '';
      h.dispose();
      if (t !== 'string') return { kind: 'malformed', error: `runner returned ${t}` };
      if (s.startsWith('!too-big:')) return { kind: 'malformed', error: `result of ${s.slice(9)} characters is over the ${this.limits.maxResultChars} limit` };
      if (s.startsWith('!bad-type:')) return { kind: 'malformed', error: `hook returned a ${s.slice(10)}; return an effect object or null` };
      if (s === '!unserialisable') return { kind: 'malformed', error: 'result is not JSON-serialisable' };
      const [value, nb] = JSON.parse(s) as [unknown, unknown];
      return { kind: 'ok', value, nb };
    } catch (e) {
      // a fault outside QuickJS's own checks (e.g. Node's stack): this runtime and module are suspect
      poisonModule(this.module);
      this.dispose();
      return { kind: 'crashed', error: `sandbox fault: ${errorText(e)}` };
    }
  }

  dispose(): void {
    const vm = this.vm;
    const rt = this.rt;
    this.vm = null;
    this.rt = null;
    try {
      this.hook?.dispose();
      this.runner?.dispose();
    } catch {
      // handles of a faulted runtime may already be gone
    }
    this.hook = null;
    this.runner = null;
    try {
      vm?.dispose();
      rt?.dispose();
    } catch {
      // a faulted runtime cannot always be freed; its module is dropped anyway
    }
  }
}

// ---------------------------------------------------------------- regular expressions for rules

const REGEX_SOURCE = `function hook(ctx, nb) {
  const cache = globalThis.__re || (globalThis.__re = new Map());
  const key = ctx.f + '/' + ctx.p;
  let re = cache.get(key);
  if (!re) { re = new RegExp(ctx.p, ctx.f); cache.set(key, re); }
  re.lastIndex = 0;
  return re.test(ctx.s);
}`;

/** longest text a `matches` rule tests, @default 10000 */
export const MAX_MATCH_INPUT = 10000;

/**
 * `matches` conditions run in QuickJS too: its regex engine polls the interrupt handler, so a
 * catastrophic pattern runs out of fuel instead of hanging the host.
 */
export class RegexSandbox {
  private sb: CodeSandbox | null = null;
  private readonly limits: Partial<SandboxLimits>;
  constructor(limits: Partial<SandboxLimits> = {}) {
    this.limits = limits;
  }
  async init(): Promise<void> {
    const r = await CodeSandbox.compile(REGEX_SOURCE, { limits: this.limits });
    if (r.wallclock) throw wallGuardError(`the regex sandbox: ${r.error ?? ''}`);
    if (!r.ok || !r.sandbox) throw new HarnessError('HARNESS_SANDBOX_UNAVAILABLE', `regex sandbox failed to start: ${r.error ?? '?'}`);
    this.sb = r.sandbox;
  }
  test(pattern: string, flags: string, input: string): { ok: true; value: boolean } | { ok: false; kind: CallOutcome['kind']; error: string } {
    if (!this.sb || !this.sb.alive) return { ok: false, kind: 'crashed', error: 'regex sandbox is not running' };
    const out = this.sb.call(JSON.stringify({ p: pattern, f: flags, s: input.slice(0, MAX_MATCH_INPUT) }), '{}');
    if (out.kind === 'ok') return { ok: true, value: out.value === true };
    return { ok: false, kind: out.kind, error: out.error };
  }
  dispose(): void {
    this.sb?.dispose();
    this.sb = null;
  }
}
