/**
 * The hostile corpus: patches that try to break out of the sandbox or break the runtime down.
 * test/unit/harness/hostile.test.ts runs every one; each must be rejected with a typed verdict or
 * run contained (the episode goes on, the hook does nothing or its effect is clamped, counters
 * record it).
 */
import type { HookCounters, HookName } from '../types.ts';

export type HostileCategory = 'time' | 'recursion' | 'memory' | 'output' | 'escape' | 'pollution' | 'throw' | 'malformed' | 'forcing' | 'schema';

export interface HostileCase {
  name: string;
  category: HostileCategory;
  /** what it tries */
  tries: string;
  patch: unknown;
  /** `rejected`: schema or compile says no; `contained`: it runs and is counted */
  expect: 'rejected' | 'contained';
  /** counters (summed over the patch's entries) that must end above 0 */
  counts?: (keyof Omit<HookCounters, 'disabled'>)[];
  /** the expert still wins: the hostile effect was neutralised */
  expertWins?: boolean;
}

const code = (hook: HookName, body: string): { code: { hook: HookName; source: string }[] } => ({
  code: [{ hook, source: `function hook(ctx, nb) {\n${body}\n}` }],
});

export const HOSTILE_CORPUS: readonly HostileCase[] = [
  // ---------------------------------------------------------------- time
  { name: 'loop-preaction', category: 'time', tries: 'while (true) {} before every action', patch: code('preAction', 'while (true) {}'), expect: 'contained', counts: ['timedOut', 'skipped'], expertWins: true },
  { name: 'loop-predecision', category: 'time', tries: 'for (;;) {} before every decision', patch: code('preDecision', 'for (;;) {}'), expect: 'contained', counts: ['timedOut'], expertWins: true },
  { name: 'loop-init', category: 'time', tries: 'an endless loop at init', patch: code('init', 'let i = 0; while (true) i++;'), expect: 'contained', counts: ['timedOut'], expertWins: true },
  { name: 'loop-postfeedback', category: 'time', tries: 'an endless loop after every observation', patch: code('postFeedback', 'while (ctx) {}'), expect: 'contained', counts: ['timedOut'], expertWins: true },
  { name: 'loop-toplevel', category: 'time', tries: 'an endless loop in top-level code (at compile time)', patch: { code: [{ hook: 'preAction', source: 'while (true) {}\nfunction hook(ctx, nb) { return null; }' }] }, expect: 'rejected' },
  { name: 'loop-catch-interrupt', category: 'time', tries: 'catching the interrupt to keep looping', patch: code('preAction', 'for (;;) { try { for (;;) {} } catch (e) {} }'), expect: 'contained', counts: ['timedOut'], expertWins: true },
  { name: 'loop-frozen-clock', category: 'time', tries: 'busy-waiting on Date.now() (frozen in the sandbox)', patch: code('preAction', 'const t = Date.now(); while (Date.now() - t < 1000) {} return null;'), expect: 'contained', counts: ['timedOut'], expertWins: true },
  { name: 'regex-catastrophic-code', category: 'time', tries: 'catastrophic backtracking in a code hook', patch: code('preAction', "return /(a+)+$/.test('a'.repeat(40) + 'b') ? null : null;"), expect: 'contained', counts: ['timedOut'], expertWins: true },
  { name: 'regex-catastrophic-rule', category: 'time', tries: 'catastrophic backtracking in a rule `matches` on the observation', patch: { rules: [{ hook: 'postFeedback', when: { path: 'observation', matches: '^(\\w+\\s?)*$' }, effect: { type: 'inject_hint', message: 'x' } }] }, expect: 'contained', counts: ['timedOut'], expertWins: true },
  { name: 'loop-json-heavy', category: 'time', tries: 'a loop of expensive builtins (few interrupt polls per ms)', patch: code('preAction', "const o = {a: 'x'.repeat(1000)}; let s; for (;;) { s = JSON.stringify(o); JSON.parse(s); }"), expect: 'contained', counts: ['timedOut'], expertWins: true },
  { name: 'generator-endless', category: 'time', tries: 'spreading an endless generator', patch: code('preDecision', 'function* g() { for (;;) yield 1; } return [...g()].length;'), expect: 'contained', expertWins: true },
  { name: 'sort-comparator-loop', category: 'time', tries: 'a sort comparator that never returns', patch: code('preAction', '[3, 1, 2].sort(() => { for (;;) {} }); return null;'), expect: 'contained', counts: ['timedOut'], expertWins: true },

  // ---------------------------------------------------------------- recursion
  { name: 'recursion-direct', category: 'recursion', tries: 'unbounded recursion', patch: code('preAction', 'function f(n) { return f(n + 1) + 1; } return f(0);'), expect: 'contained', counts: ['outOfMemory'], expertWins: true },
  { name: 'recursion-mutual', category: 'recursion', tries: 'mutual recursion', patch: code('preDecision', 'function a(n) { return b(n) } function b(n) { return a(n + 1) } return a(0);'), expect: 'contained', counts: ['outOfMemory'], expertWins: true },
  { name: 'recursion-tostring', category: 'recursion', tries: 'recursion through implicit toString', patch: code('preAction', 'const o = {}; o.toString = () => String(o); return String(o);'), expect: 'contained', counts: ['outOfMemory'], expertWins: true },
  { name: 'recursion-json-deep', category: 'recursion', tries: 'JSON.stringify of a 200,000-deep object (native recursion)', patch: code('preAction', 'const o = {}; let c = o; for (let i = 0; i < 200000; i++) { c.a = {}; c = c.a; } return JSON.stringify(o);'), expect: 'contained', expertWins: true },
  { name: 'recursion-proxy', category: 'recursion', tries: 'a Proxy whose get trap reads itself', patch: code('preAction', 'const p = new Proxy({}, { get: (t, k, r) => r[k] }); return p.type;'), expect: 'contained', counts: ['outOfMemory'], expertWins: true },
  { name: 'recursion-flat', category: 'recursion', tries: 'flat(Infinity) of a 100,000-deep array', patch: code('preAction', 'let a = []; for (let i = 0; i < 100000; i++) a = [a]; return a.flat(Infinity).length ? null : null;'), expect: 'contained', expertWins: true },

  // ---------------------------------------------------------------- memory
  { name: 'memory-array-bomb', category: 'memory', tries: 'pushing objects until memory runs out', patch: code('preAction', 'const a = []; for (let i = 0; ; i++) a.push({i, s: [i, i, i]});'), expect: 'contained', expertWins: true },
  { name: 'memory-string-doubling', category: 'memory', tries: 'doubling a string until memory runs out', patch: code('preDecision', "let s = 'x'; for (;;) s += s;"), expect: 'contained', counts: ['outOfMemory'], expertWins: true },
  { name: 'memory-array-fill-bomb', category: 'memory', tries: 'growing arrays by realloc (which QuickJS\'s per-runtime cap does not count here)', patch: code('preAction', 'const a = []; for (;;) a.push(new Array(100000).fill(1));'), expect: 'contained', counts: ['outOfMemory'], expertWins: true },
  { name: 'memory-repeat', category: 'memory', tries: "'x'.repeat(1e9)", patch: code('preAction', "return {type: 'block_and_prompt', message: 'x'.repeat(1e9)};"), expect: 'contained', expertWins: true },
  { name: 'memory-arraybuffer', category: 'memory', tries: 'a 1 GB ArrayBuffer', patch: code('preAction', 'new ArrayBuffer(1e9); return null;'), expect: 'contained', expertWins: true },
  { name: 'memory-map', category: 'memory', tries: 'filling a Map', patch: code('postFeedback', 'const m = new Map(); for (let i = 0; ; i++) m.set(i, {i});'), expect: 'contained', expertWins: true },
  { name: 'memory-retained', category: 'memory', tries: 'keeping 128 MB more in a global on every call', patch: code('preDecision', "globalThis.keep = globalThis.keep || []; for (let i = 0; i < 128; i++) globalThis.keep.push(new Array(131072).fill(i)); return null;"), expect: 'contained', counts: ['outOfMemory'], expertWins: true },

  // ---------------------------------------------------------------- output
  { name: 'output-huge-message', category: 'output', tries: 'a 1,000,000-character block message', patch: code('preAction', "return {type: 'block_and_prompt', message: 'z'.repeat(1000000)};"), expect: 'contained', counts: ['malformed'], expertWins: true },
  { name: 'output-long-hint', category: 'output', tries: 'a 10,000-character hint (over the message limit)', patch: code('preDecision', "return 'h'.repeat(10000);"), expect: 'contained', counts: ['clamped', 'hinted'], expertWins: true },
  { name: 'output-notebook-bomb', category: 'output', tries: 'a 1 MB notebook', patch: code('postFeedback', "nb.big = 'n'.repeat(1 << 20); return null;"), expect: 'contained', counts: ['malformed'], expertWins: true },
  { name: 'output-notebook-over', category: 'output', tries: 'a 50 KB notebook (over the notebook cap, under the result cap)', patch: code('postFeedback', "nb.big = 'n'.repeat(50000); return null;"), expect: 'contained', counts: ['clamped'], expertWins: true },
  { name: 'output-throwing-getter', category: 'output', tries: 'an effect whose getter throws while serialised', patch: code('preAction', "return { get type() { throw new Error('boom'); } };"), expect: 'contained', counts: ['threw'], expertWins: true },
  { name: 'output-circular', category: 'output', tries: 'a circular effect object', patch: code('preAction', "const o = {type: 'force_action'}; o.action = o; return o;"), expect: 'contained', counts: ['threw'], expertWins: true },
  { name: 'output-bigint', category: 'output', tries: 'a BigInt in the effect', patch: code('preDecision', "return {type: 'hint', message: 10n};"), expect: 'contained', counts: ['threw'], expertWins: true },

  // ---------------------------------------------------------------- escape
  { name: 'escape-process-exit', category: 'escape', tries: 'process.exit(1)', patch: code('preAction', 'process.exit(1);'), expect: 'contained', counts: ['threw'], expertWins: true },
  { name: 'escape-require', category: 'escape', tries: "require('child_process').execSync('id')", patch: code('preAction', "return require('child_process').execSync('id');"), expect: 'contained', counts: ['threw'], expertWins: true },
  { name: 'escape-globalthis-process', category: 'escape', tries: 'globalThis.process.mainModule', patch: code('preAction', 'return globalThis.process.mainModule.require("fs");'), expect: 'contained', counts: ['threw'], expertWins: true },
  { name: 'escape-function-constructor', category: 'escape', tries: "Function('return this')().process", patch: code('preAction', "return Function('return this')().process.exit(1);"), expect: 'contained', counts: ['threw'], expertWins: true },
  { name: 'escape-constructor-chain', category: 'escape', tries: "ctx.constructor.constructor('return process')()", patch: code('preAction', "const p = ctx.constructor.constructor('return process')(); p.exit(1);"), expect: 'contained', counts: ['threw'], expertWins: true },
  { name: 'escape-timers', category: 'escape', tries: 'setTimeout / setInterval', patch: code('preAction', 'setInterval(() => {}, 0); setTimeout(() => {}, 0); return null;'), expect: 'contained', counts: ['threw'], expertWins: true },
  { name: 'escape-dynamic-import', category: 'escape', tries: "import('fs') (returns a promise, never a module)", patch: code('preAction', "return import('fs');"), expect: 'contained', counts: ['malformed'], expertWins: true },
  { name: 'escape-host-apis', category: 'escape', tries: 'WebAssembly, fetch, Deno, Bun, SharedArrayBuffer tricks', patch: code('preAction', "return fetch('http://example.com') || WebAssembly.compile(new Uint8Array(8));"), expect: 'contained', counts: ['threw'], expertWins: true },
  { name: 'escape-eval', category: 'escape', tries: "eval('process')", patch: code('preDecision', "return eval('process.env.HOME');"), expect: 'contained', counts: ['threw'], expertWins: true },

  // ---------------------------------------------------------------- pollution
  { name: 'pollute-object-prototype', category: 'pollution', tries: 'Object.prototype.type/action so {} reads as force_action', patch: code('preAction', "Object.prototype.type = 'force_action'; Object.prototype.action = 'look'; return {};"), expect: 'contained', counts: ['malformed'], expertWins: true },
  { name: 'pollute-ctx-proto', category: 'pollution', tries: 'ctx.__proto__.polluted = true', patch: code('preAction', "ctx.__proto__.polluted = true; ctx.history.__proto__.push = null; return null;"), expect: 'contained', expertWins: true },
  { name: 'pollute-proto-json', category: 'pollution', tries: 'an effect with a __proto__ key', patch: code('preAction', "return JSON.parse('{\"__proto__\": {\"polluted\": true}, \"type\": \"force_action\", \"action\": \"look\"}');"), expect: 'contained', counts: ['malformed'], expertWins: true },
  { name: 'mutate-ctx-strict', category: 'pollution', tries: 'writing to the frozen ctx (strict mode)', patch: code('postFeedback', "'use strict'; ctx.step = 0; ctx.history.push({}); return null;"), expect: 'contained', counts: ['threw'], expertWins: true },
  { name: 'swap-json-builtins', category: 'pollution', tries: 'replacing JSON.parse/stringify and the global hook', patch: code('preAction', "JSON.stringify = () => '[{\"type\":\"force_action\",\"action\":\"look\"},{}]'; JSON.parse = () => ({}); globalThis.hook = () => ({type: 'force_action', action: 'look'}); return null;"), expect: 'contained', expertWins: true },

  // ---------------------------------------------------------------- throw
  { name: 'throw-string', category: 'throw', tries: 'throwing a string', patch: code('preAction', "throw 'nope';"), expect: 'contained', counts: ['threw'], expertWins: true },
  { name: 'throw-null', category: 'throw', tries: 'throwing null', patch: code('postFeedback', 'throw null;'), expect: 'contained', counts: ['threw'], expertWins: true },
  { name: 'throw-looping-getter', category: 'throw', tries: 'throwing an object whose message getter loops forever', patch: code('preAction', 'throw { get message() { for (;;) {} } };'), expect: 'contained', expertWins: true },

  // ---------------------------------------------------------------- malformed
  { name: 'malformed-wrong-hook-effect', category: 'malformed', tries: 'preDecision returning block_and_prompt', patch: code('preDecision', "return {type: 'block_and_prompt', message: 'no'};"), expect: 'contained', counts: ['malformed'], expertWins: true },
  { name: 'malformed-unknown-type', category: 'malformed', tries: 'an unknown effect type', patch: code('preAction', "return {type: 'delete_everything'};"), expect: 'contained', counts: ['malformed'], expertWins: true },
  { name: 'malformed-number-message', category: 'malformed', tries: 'a message that is a number', patch: code('postFeedback', "return {type: 'inject_hint', message: 42};"), expect: 'contained', counts: ['malformed'], expertWins: true },
  { name: 'malformed-function', category: 'malformed', tries: 'returning a function', patch: code('preAction', 'return function () {};'), expect: 'contained', counts: ['malformed'], expertWins: true },
  { name: 'malformed-async-hook', category: 'malformed', tries: 'an async hook (returns a Promise)', patch: { code: [{ hook: 'preAction', source: "async function hook(ctx, nb) { return {type: 'force_action', action: 'look'}; }" }] }, expect: 'contained', counts: ['malformed'], expertWins: true },
  { name: 'malformed-init-array', category: 'malformed', tries: 'init returning 100 effects', patch: code('init', "return Array.from({length: 100}, () => ({type: 'skill', text: 's'}));"), expect: 'contained', counts: ['malformed'], expertWins: true },
  { name: 'too-many-skills', category: 'malformed', tries: 'init adding 10 skills (5 at most)', patch: code('init', "return {skills: Array.from({length: 10}, (_, i) => 'skill ' + i)};"), expect: 'contained', counts: ['clamped'], expertWins: true },

  // ---------------------------------------------------------------- forcing
  { name: 'force-nonexistent-preaction', category: 'forcing', tries: 'forcing an action that does not exist', patch: code('preAction', "return {type: 'force_action', action: 'teleport to the goal'};"), expect: 'contained', counts: ['clamped'], expertWins: true },
  { name: 'rewrite-nonexistent', category: 'forcing', tries: 'rewriting every action into nonsense', patch: { rules: [{ hook: 'preAction', effect: { type: 'rewrite_action', action: 'win the game now' } }] }, expect: 'contained', counts: ['clamped'], expertWins: true },
  { name: 'force-nonexistent-post', category: 'forcing', tries: 'forcing a nonexistent action after every observation', patch: code('postFeedback', "return {type: 'force_action', action: 'fly'};"), expect: 'contained', counts: ['clamped'], expertWins: true },
  { name: 'force-forever', category: 'forcing', tries: 'forcing `inventory` after every observation (a loop of forced steps)', patch: { rules: [{ hook: 'postFeedback', effect: { type: 'force_action', action: 'inventory' } }] }, expect: 'contained', counts: ['forced', 'clamped'] },
  { name: 'block-everything-rule', category: 'forcing', tries: 'blocking every action (rule)', patch: { rules: [{ hook: 'preAction', effect: { type: 'block_and_prompt', message: 'No.' } }] }, expect: 'contained', counts: ['blocked', 'clamped'], expertWins: true },
  { name: 'block-everything-code', category: 'forcing', tries: 'blocking every action (code)', patch: code('preAction', "return {type: 'block_and_prompt', message: 'Blocked again: ' + ctx.blocks};"), expect: 'contained', counts: ['blocked', 'clamped'], expertWins: true },

  // ---------------------------------------------------------------- schema
  { name: 'schema-too-many-entries', category: 'schema', tries: '13 rules', patch: { rules: Array.from({ length: 13 }, () => ({ hook: 'preDecision', effect: { type: 'hint', message: 'x' } })) }, expect: 'rejected' },
  { name: 'schema-source-too-long', category: 'schema', tries: 'an 8,001+ character source', patch: { code: [{ hook: 'preAction', source: `function hook(ctx, nb) { return null; }\n//${'x'.repeat(8000)}` }] }, expect: 'rejected' },
  { name: 'schema-proto-path', category: 'schema', tries: 'a rule path through __proto__', patch: { rules: [{ hook: 'preAction', when: { path: 'nb.__proto__.x', equals: 1 }, effect: { type: 'block_and_prompt', message: 'x' } }] }, expect: 'rejected' },
  { name: 'schema-deep-condition', category: 'schema', tries: 'a condition nested 100 deep', patch: { rules: [{ hook: 'preAction', when: Array.from({ length: 100 }).reduce((c: unknown) => ({ not: c }), { pred: 'repeatedAction' }), effect: { type: 'block_and_prompt', message: 'x' } }] }, expect: 'rejected' },
  { name: 'schema-no-hook-function', category: 'schema', tries: 'source that never defines hook()', patch: { code: [{ hook: 'preAction', source: 'var hook = 1; // function hook( is only mentioned' }] }, expect: 'rejected' },
  { name: 'schema-syntax-error', category: 'schema', tries: 'source that does not parse', patch: code('preAction', 'return {{{;'), expect: 'rejected' },
  { name: 'schema-not-an-object', category: 'schema', tries: 'a patch that is an array of strings', patch: ['rm -rf /'], expect: 'rejected' },
];
