/** The typed-rule interpreter: condition trees over ctx paths and predicates, and `{{path}}` templates. */
import { Hr1Error } from '../cluster/errors.ts';
import { canonicalJson } from './canonical.ts';
import { wallGuardError } from './errors.ts';
import type { RegexSandbox } from './sandbox.ts';
import type { Cond } from './schema.ts';
import type { HookCtx, Notebook } from './types.ts';

/** what a path is read from: the ctx plus `nb` */
export type Scope = HookCtx & { nb: Notebook };

/** Codes of {@link RuleFault}, one per `kind`. */
export type RuleFaultCode = 'RULE_TIMEOUT' | 'RULE_THREW' | 'RULE_OOM';

const RULE_FAULT_CODE = { timeout: 'RULE_TIMEOUT', threw: 'RULE_THREW', oom: 'RULE_OOM' } as const;

/** a fault while evaluating a rule (a regex that timed out); the rule then does nothing */
export class RuleFault extends Hr1Error<RuleFaultCode> {
  static override readonly wireAs = 'task';
  readonly kind: 'timeout' | 'threw' | 'oom';
  constructor(kind: 'timeout' | 'threw' | 'oom', message: string) {
    super(RULE_FAULT_CODE[kind], message);
    // the fault text (errorText: `name: message`) goes into episode records: keep it as it was
    this.name = 'Error';
    this.kind = kind;
  }
}

/** read `a.b.-1.c`; own properties only; `length` of strings and arrays; missing → undefined */
export function getPath(scope: unknown, path: string): unknown {
  let cur: unknown = scope;
  for (const seg of path.split('.')) {
    if (cur === null || cur === undefined) return undefined;
    if (typeof cur === 'string') {
      if (seg === 'length') cur = cur.length;
      else return undefined;
      continue;
    }
    if (Array.isArray(cur)) {
      if (seg === 'length') {
        cur = cur.length;
        continue;
      }
      if (!/^-?\d+$/.test(seg)) return undefined;
      const i = Number(seg);
      cur = cur[i < 0 ? cur.length + i : i];
      continue;
    }
    if (typeof cur !== 'object') return undefined;
    cur = Object.prototype.hasOwnProperty.call(cur, seg) ? (cur as Record<string, unknown>)[seg] : undefined;
  }
  return cur;
}

export function evalCond(c: Cond, scope: Scope, regex: RegexSandbox | null): boolean {
  if ('all' in c) return c.all.every((x) => evalCond(x, scope, regex));
  if ('any' in c) return c.any.some((x) => evalCond(x, scope, regex));
  if ('not' in c) return !evalCond(c.not, scope, regex);
  if ('pred' in c) return scope.pred[c.pred] === true;
  const v = getPath(scope, c.path);
  if ('equals' in c) return v !== undefined && canonicalJson(v) === canonicalJson(c.equals);
  if ('contains' in c) {
    if (typeof v === 'string') return v.includes(c.contains);
    if (Array.isArray(v)) return v.includes(c.contains);
    return false;
  }
  if ('matches' in c) {
    if (typeof v !== 'string') return false;
    if (!regex) throw new RuleFault('threw', 'no regex sandbox');
    const r = regex.test(c.matches, c.flags === 'i' ? 'i' : '', v);
    if (r.ok) return r.value;
    if (r.kind === 'wallclock') throw wallGuardError(`matches /${c.matches}/: ${r.error}`);
    throw new RuleFault(r.kind === 'timeout' ? 'timeout' : r.kind === 'oom' ? 'oom' : 'threw', `matches /${c.matches}/: ${r.error}`);
  }
  if (typeof v !== 'number') return false;
  if ('gt' in c) return v > c.gt;
  if ('gte' in c) return v >= c.gte;
  if ('lt' in c) return v < c.lt;
  return v <= c.lte;
}

/** does a condition use `matches` (then the episode starts a regex sandbox) */
export function usesRegex(c: Cond | undefined): boolean {
  if (!c) return false;
  if ('all' in c) return c.all.some(usesRegex);
  if ('any' in c) return c.any.some(usesRegex);
  if ('not' in c) return usesRegex(c.not);
  return 'matches' in c;
}

/** fill `{{path}}` from the scope (strings as they are, other values as JSON, missing as '') */
export function fillTemplate(text: string, scope: Scope): string {
  if (!text.includes('{{')) return text;
  return text.replace(/\{\{\s*([A-Za-z0-9_.-]{1,200})\s*\}\}/g, (_, p: string) => {
    const v = getPath(scope, p);
    if (v === undefined || v === null) return '';
    return typeof v === 'string' ? v : JSON.stringify(v);
  });
}
