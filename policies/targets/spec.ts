/**
 * Target spec strings: how a command line or a config names the model behind an agent.
 *
 * @example
 * parseTargetSpec('sim/small-7b');                                  // { kind: 'sim', profile: 'small-7b' }
 * parseTargetSpec('openai:http://127.0.0.1:8000/v1#Qwen/Qwen2.5-7B'); // { kind: 'openai', baseUrl, model }
 * parseTargetSpec('lm/qwen2.5-0.5b');                               // { kind: 'lm', name: 'qwen2.5-0.5b' }
 */
import { Hr1Error, type Hr1ErrorFields } from '../../cluster/errors.ts';

export type TargetSpec =
  | { kind: 'sim'; profile: string }
  | { kind: 'openai'; baseUrl: string; model: string }
  | { kind: 'lm'; name: string };

/** the accepted forms, with an example each; used in every spec error message */
export const TARGET_SPEC_FORMS = [
  { form: 'sim/<profile>', example: 'sim/small-7b', what: 'a simulated target (tests, benchmarks)' },
  { form: 'openai:<base-url>#<model>', example: 'openai:http://127.0.0.1:8000/v1#Qwen/Qwen2.5-7B-Instruct', what: 'any OpenAI-compatible chat endpoint' },
  { form: 'lm/<name>', example: 'lm/qwen2.5-0.5b', what: 'a local language model' },
] as const;

const FORMS_TEXT = TARGET_SPEC_FORMS.map((f) => `${f.form} (e.g. ${f.example})`).join(', ');

/**
 * Codes of the target layer outside its own families: {@link TargetSpecError}'s,
 * `TARGET_OPTIONS` (TargetOptionsError, options.ts: a target setting that is unknown, bad or
 * not for the target's kind), and those raised as a plain Hr1Error (`TARGET_NOT_AVAILABLE` in
 * make.ts; `UNKNOWN_SIM_PROFILE`, `SIM_NO_ORACLE` in sim/sim.ts: plain so that their printed
 * name stays `Hr1Error`).
 */
export type TargetErrorCode = 'TARGET_SPEC' | 'TARGET_OPTIONS' | 'TARGET_NOT_AVAILABLE' | 'UNKNOWN_SIM_PROFILE' | 'SIM_NO_ORACLE';

/** A target spec string that does not have one of the accepted forms. */
export class TargetSpecError extends Hr1Error<'TARGET_SPEC'> {
  /** the offending spec string */
  readonly spec: string;
  constructor(spec: string, message: string, fields: Hr1ErrorFields = {}) {
    super('TARGET_SPEC', message, { retryable: false, ...fields, data: { spec, ...fields.data } });
    this.spec = spec;
  }
}

const NAME_RE = /^[A-Za-z0-9][A-Za-z0-9._:@/+-]*$/;

/**
 * Parse a target spec string. Throws {@link TargetSpecError} naming the accepted forms when the
 * string fits none of them.
 */
export function parseTargetSpec(spec: string): TargetSpec {
  if (typeof spec !== 'string' || spec.trim() === '') {
    throw new TargetSpecError(String(spec), `a target spec is needed; write one of ${FORMS_TEXT}`);
  }
  const s = spec.trim();
  if (s.startsWith('sim/')) {
    const profile = s.slice(4);
    if (!/^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(profile)) {
      throw new TargetSpecError(spec, `target "${spec}": "${profile}" is not a sim profile name; write sim/<profile> with letters, digits, . _ - (e.g. sim/small-7b)`);
    }
    return { kind: 'sim', profile };
  }
  if (s.startsWith('lm/')) {
    const name = s.slice(3);
    if (!NAME_RE.test(name)) {
      throw new TargetSpecError(spec, `target "${spec}": "${name}" is not a model name; write lm/<name> (e.g. lm/qwen2.5-0.5b)`);
    }
    return { kind: 'lm', name };
  }
  if (s.startsWith('openai:')) {
    const rest = s.slice('openai:'.length);
    // a base URL has no use for a fragment, so the first # ends it (a model name may hold #)
    const hash = rest.indexOf('#');
    if (hash < 0) {
      throw new TargetSpecError(spec, `target "${spec}" names no model; write openai:<base-url>#<model> (e.g. ${TARGET_SPEC_FORMS[1].example})`);
    }
    const base = rest.slice(0, hash);
    const model = rest.slice(hash + 1);
    let url: URL;
    try {
      url = new URL(base);
    } catch {
      throw new TargetSpecError(spec, `target "${spec}": "${base}" is not a URL; write openai:<base-url>#<model> with a base URL like http://127.0.0.1:8000/v1`);
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') {
      throw new TargetSpecError(spec, `target "${spec}": the base URL must be http:// or https://, got ${url.protocol}`);
    }
    if (model === '' || /\s/.test(model)) {
      throw new TargetSpecError(spec, `target "${spec}": "${model}" is not a model name; put the served model's name after # (e.g. #Qwen/Qwen2.5-7B-Instruct)`);
    }
    return { kind: 'openai', baseUrl: base.replace(/\/+$/, ''), model };
  }
  throw new TargetSpecError(spec, `unknown target "${spec}"; write one of ${FORMS_TEXT}`);
}

/** The canonical string of a parsed spec (`formatTargetSpec(parseTargetSpec(s))` is `s` without a trailing slash on the URL). */
export function formatTargetSpec(t: TargetSpec): string {
  switch (t.kind) {
    case 'sim':
      return `sim/${t.profile}`;
    case 'lm':
      return `lm/${t.name}`;
    case 'openai':
      return `openai:${t.baseUrl}#${t.model}`;
  }
}
