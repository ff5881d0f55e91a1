/**
 * The teacher: the "prompted editor" baseline. It reads a packet, and only the packet (it never
 * runs the target), and writes patches the way a prompted frontier editor reasons from the
 * signals: name the failure, then pick a mechanism (a typed rule, a code hook, a skill) and a
 * phrasing. Deterministic given (packet, seed); different seeds give different proposals.
 */
import { ENV_NAMES, type EnvName } from '../../envs/registry.ts';
import { Rng, hashString } from '../../cluster/rng.ts';
import { patchHash, toPatch, type CodeHook, type Patch, type Rule } from '../../harness/index.ts';
import { packetHash, type Packet } from './packet.ts';

/** Proposals per packet. @default 4 */
export const DEFAULT_K = 4;

/** A failure the teacher reads off a packet, with how many shown episodes show it. */
export interface Finding {
  kind: 'loop' | 'noop' | 'invalid_format' | 'sql_error' | 'invalid_click' | 'step_limit' | 'early_finish' | 'revisit';
  episodes: number;
  /** one line of evidence, quoted from the packet */
  evidence: string;
}

/** One candidate patch with the reasoning behind it. */
export interface Proposal {
  patch: Patch;
  hash: string;
  /** the findings it addresses, in order */
  addresses: Finding['kind'][];
  /** one line per component: what it does and why */
  rationale: string[];
}

/** Read the failures off a packet, most widespread first (ties by kind). */
export function diagnose(p: Packet): Finding[] {
  const eps = p.episodes;
  const out: Finding[] = [];
  const add = (kind: Finding['kind'], n: number, evidence: string): void => {
    if (n > 0) out.push({ kind, episodes: n, evidence });
  };
  const loops = eps.filter((e) => e.signals.longestRun >= 3);
  const top = loops.flatMap((e) => e.signals.repeatedActions.slice(0, 1)).sort((a, b) => b.count - a.count)[0];
  add('loop', loops.length, top ? `"${top.action}" repeated ×${top.count}` : '');
  add('noop', eps.filter((e) => e.signals.noOps > 0).length, `${p.totals.noOps.count} "nothing happens" observations`);
  add('invalid_format', eps.filter((e) => e.signals.invalidFormats > 0 || e.status === 'invalid_format').length, `${p.totals.invalidFormats.count} outputs that did not parse`);
  add('sql_error', eps.filter((e) => e.signals.sqlErrors > 0).length, `${p.totals.sqlErrors.count} SQL errors`);
  add('invalid_click', eps.filter((e) => e.signals.invalidClicks > 0).length, `${p.totals.invalidClicks.count} invalid clicks`);
  add('step_limit', eps.filter((e) => e.status === 'step_limit').length, `${p.totals.stepLimit.episodes} episodes hit the step limit`);
  // failures that end quickly without an error: the agent finished (answered, placed, bought) too soon
  add('early_finish', eps.filter((e) => e.status === 'failed' && e.steps <= 3 && e.signals.sqlErrors === 0 && e.signals.invalidFormats === 0).length, 'failed episodes that ended within 3 steps');
  // the same place visited again, not consecutively: lost track of what it saw
  const revisits = eps.filter((e) => {
    const go = e.excerpt.filter((l) => /^go to /.test(l.action)).map((l) => l.action);
    return go.length !== new Set(go).size;
  });
  add('revisit', revisits.length, 'places visited again after leaving them');
  return out.sort((a, b) => b.episodes - a.episodes || (a.kind < b.kind ? -1 : a.kind > b.kind ? 1 : 0));
}

// ---------------------------------------------------------------- components

/** A piece of a patch: one skill, rule or code hook, with the reason for it. */
export interface Component {
  skill?: string;
  rule?: Rule;
  code?: CodeHook;
  why: string;
}

/** A shipped env, whose phrasings the teacher knows, or `other` (a registered env: generic phrasings). */
export type Env = EnvName | 'other';

function envOf(p: Packet): Env {
  return (ENV_NAMES as readonly string[]).includes(p.env) ? (p.env as EnvName) : 'other';
}

const LOOP_BLOCK = [
  "You just did '{{proposed.action}}' and it did not change anything. Do not repeat the same action; try a different one.",
  "'{{proposed.action}}' is the same action as last step. You seem stuck in a loop: choose a different action that makes progress.",
  'Repeating the last action will not help. Pick something different that moves you toward the goal.',
];
const LOOP_SKILL = [
  'Never repeat the same action more than twice in a row. If an action did not change the situation, try a different action.',
  'If you notice you are stuck doing the same thing, stop and try something different: another location, another object, or another command.',
  'Avoid loops: before acting, check whether you already tried this exact action; if so, choose a different one.',
];
const NOOP_HINT = [
  "'{{last.action}}' did nothing. If nothing happens, the action was not valid here: check the exact object names and numbers you can see, and try a different action.",
  'Nothing happened, so that action did not work. Use only valid actions with the exact names from the observation.',
  'That had no effect. When nothing happens, do not try the same action again; read the last observation and pick an available action.',
];
const STEP_HINT = [
  'Only a few steps are left. Finish the task now: do the remaining steps directly, without exploring.',
  'You are close to the step limit. Stop searching and complete the goal with the fewest actions.',
];
const FORMAT_SKILL: Record<Env, string[]> = {
  alfworld: [
    'Output format: respond with exactly one action and nothing else, e.g. "go to cabinet 1" or "take apple 1 from countertop 2". Do not explain your reasoning in the reply.',
    'Always reply with one action in the command format (verb object number, e.g. "open drawer 3"). Keep your answer short: no sentences, no plans.',
  ],
  dbbench: [
    'Format: every reply must end with either "Action: Operation" followed by one ```sql block, or "Action: Answer" followed by "Final Answer: [...]". Keep it short.',
    'Respond with exactly one action per turn in the required format: "Action: Operation" and a ```sql code block to run a query, or "Action: Answer" with "Final Answer: [...]".',
  ],
  webshop: [
    'Respond with exactly one action per turn, in the format search[keywords] or click[button text]. Keep your answer short.',
    'Output format: one action only, either search[...] or click[...], with no explanation.',
  ],
  other: ['Respond with exactly one action per turn, in the format the task asks for. Keep your answer short.'],
};
const FORMAT_HINT = ['Your last reply was not in the required format. Respond with exactly one action in the required format.', 'Format check: reply with one action only, in the format of the instructions.'];
const SQL_SKILL = [
  'Before writing SQL, check the table and column names against the headers given in the task; wrap names with spaces in backticks and quote string values with single quotes.',
  'SQL checklist: use the exact table name from the task (in backticks), quote text values with single quotes, and check column names before you run the query.',
];
const SQL_HINT = [
  'The query failed. Read the error message and fix the query (check the table name, the column names and the quoting) before trying again.',
  'That was an SQL error: fix the query. If the table does not exist, use the exact table name from the task in backticks; quote string values.',
];
const CLICK_HINT = ['That click did nothing: only click buttons shown on the current page, using their exact text.', 'Invalid click. Use only the available actions on this page (their exact text), or go back and search again.'];
const EARLY_SKILL: Record<Env, string[]> = {
  alfworld: ['Check that every part of the goal is done (find, take, clean/heat/cool if asked, then put) before you put the object down.', 'Do not put the object down before you have done every step the goal asks for; verify the goal first.'],
  dbbench: ['Do not answer until you have run a query that gives the answer: query first, verify the result, then answer.', 'Before answering, run a SELECT to verify the result; do not guess.'],
  webshop: ['Before buying, verify the product matches every requirement: select the options (size, color) first, then buy.', 'Do not buy until you have chosen the options the instruction asks for and checked the price.'],
  other: ['Verify that the task is complete before you finish.'],
};
const REVISIT_SKILL = [
  'Keep track of the places you already checked and do not go back to them unless you left something there.',
  'Remember what you have already looked at: do not return to a location you already searched.',
];

function pick<T>(rng: Rng, xs: readonly T[]): T {
  return rng.pick(xs);
}

const LOOP_CODE = `function hook(ctx, nb) {
  var h = ctx.history, n = h.length;
  if (n < 2) return null;
  var a = h[n - 1].action, runs = 1;
  for (var i = n - 2; i >= 0 && h[i].action === a; i--) runs++;
  if (runs < 2) return null;
  nb.loops = (nb.loops || 0) + 1;
  return 'You repeated "' + a + '" ' + runs + ' times. Try something different.';
}`;

const NOOP_CODE = `function hook(ctx, nb) {
  if (!ctx.pred.nothingHappens || !ctx.last) return null;
  nb.failed = nb.failed || [];
  if (nb.failed.indexOf(ctx.last.action) < 0) nb.failed.push(ctx.last.action);
  if (nb.failed.length > 8) nb.failed.shift();
  return 'Nothing happens means the action was not valid. Actions that did not work so far: ' + nb.failed.join('; ') + '. Try a different action.';
}`;

const REVISIT_CODE = `function hook(ctx, nb) {
  nb.visited = nb.visited || [];
  var a = ctx.last ? ctx.last.action : '';
  if (a.indexOf('go to ') === 0 && nb.visited.indexOf(a.slice(6)) < 0) nb.visited.push(a.slice(6));
  if (nb.visited.length < 2) return null;
  return 'You already checked: ' + nb.visited.slice(-10).join(', ') + '. Do not go back there; remember what you found.';
}`;

const STEP_CODE = `function hook(ctx, nb) {
  var left = ctx.limits.stepsLeft;
  if (left === Math.floor(ctx.limits.maxSteps / 2)) return 'Half of your steps are used. Focus: finish the task with the fewest actions.';
  if (ctx.pred.stepLimitNear) return 'Only ' + left + ' steps are left: finish the task now.';
  return null;
}`;

/** The components a finding suggests, for one env. Each call draws one phrasing per component. */
export function componentsFor(f: Finding, env: Env, rng: Rng): Component[] {
  switch (f.kind) {
    case 'loop':
      return [
        { rule: { name: 'no-repeat', hook: 'preAction', when: { pred: 'proposedRepeatsLast' }, effect: { type: 'block_and_prompt', message: pick(rng, LOOP_BLOCK) } }, why: `loop (${f.evidence}): block a proposal that repeats the last action` },
        { skill: pick(rng, LOOP_SKILL), why: 'loop: a skill against repeating actions' },
        { rule: { name: 'loop-hint', hook: 'preDecision', when: { pred: 'repeatedAction' }, effect: { type: 'hint', message: 'You repeated the same action; you are stuck in a loop. Try something different.' } }, why: 'loop: a hint before deciding, after a repeat' },
        { code: { name: 'loop-counter', hook: 'preDecision', source: LOOP_CODE }, why: 'loop: count the run of the last action and name it in a hint' },
      ];
    case 'noop':
      return [
        { rule: { name: 'nothing-happens', hook: 'postFeedback', when: { pred: 'nothingHappens' }, effect: { type: 'inject_hint', message: pick(rng, NOOP_HINT) } }, why: `no-op observations (${f.evidence}): explain right after a "Nothing happens."` },
        { code: { name: 'failed-actions', hook: 'postFeedback', source: NOOP_CODE }, why: 'no-op observations: remember actions that did nothing and list them' },
        { rule: { name: 'inadmissible', hook: 'preAction', when: { pred: 'proposedInadmissible' }, effect: { type: 'block_and_prompt', message: "'{{proposed.action}}' is not a valid action here. Only choose from the admissible actions, with the exact object numbers." } }, why: 'no-op observations: block actions that are not admissible' },
        ...(env === 'alfworld' ? [{ skill: 'Go to a receptacle before you interact with it, and open it first if it is closed. Use the exact object names and numbers you see.', why: 'no-op observations: preconditions of ALFWorld actions' }] : []),
      ];
    case 'invalid_format':
      return [
        { skill: pick(rng, FORMAT_SKILL[env]), why: `invalid formats (${f.evidence}): state the output format` },
        { rule: { name: 'format-hint', hook: 'preDecision', when: { pred: 'invalidFormat' }, effect: { type: 'hint', message: pick(rng, FORMAT_HINT) } }, why: 'invalid formats: remind after a reply that did not parse' },
        { rule: { name: 'format-block', hook: 'preAction', when: { pred: 'invalidFormat' }, effect: { type: 'block_and_prompt', message: pick(rng, FORMAT_HINT) } }, why: 'invalid formats: ask again instead of executing an unparsable reply' },
      ];
    case 'sql_error':
      return [
        { skill: pick(rng, SQL_SKILL), why: `SQL errors (${f.evidence}): quoting and names` },
        { rule: { name: 'sql-error', hook: 'postFeedback', when: { pred: 'sqlError' }, effect: { type: 'inject_hint', message: pick(rng, SQL_HINT) } }, why: 'SQL errors: read the error and fix the query' },
        { rule: { name: 'no-table', hook: 'postFeedback', when: { path: 'observation', matches: "^1146 |doesn't exist", flags: 'i' }, effect: { type: 'inject_hint', message: 'That table does not exist. Use the exact table name given in the task, in backticks.' } }, why: 'SQL errors: a missing table names the fix' },
      ];
    case 'invalid_click':
      return [
        { rule: { name: 'bad-click', hook: 'postFeedback', when: { pred: 'nothingHappens' }, effect: { type: 'inject_hint', message: pick(rng, CLICK_HINT) } }, why: `invalid clicks (${f.evidence})` },
        { rule: { name: 'click-block', hook: 'preAction', when: { pred: 'proposedInadmissible' }, effect: { type: 'block_and_prompt', message: "'{{proposed.action}}' is not on this page. Only use the available actions." } }, why: 'invalid clicks: block clicks that are not on the page' },
      ];
    case 'step_limit':
      return [
        { rule: { name: 'steps-left', hook: 'preDecision', when: { pred: 'stepLimitNear' }, effect: { type: 'hint', message: pick(rng, STEP_HINT) } }, why: `step limit (${f.evidence}): warn when few steps are left` },
        { code: { name: 'step-budget', hook: 'preDecision', source: STEP_CODE }, why: 'step limit: a halfway and a final warning' },
      ];
    case 'early_finish':
      return [{ skill: pick(rng, EARLY_SKILL[env]), why: `early finish (${f.evidence}): verify before finishing` }];
    case 'revisit':
      return [
        { skill: pick(rng, REVISIT_SKILL), why: `revisits (${f.evidence}): keep track of visited places` },
        { code: { name: 'visited', hook: 'preDecision', source: REVISIT_CODE }, why: 'revisits: a notebook of visited places, shown as a hint' },
      ];
  }
}

/** proposal styles an editor might take; a seed picks among them */
const STYLES = ['focused', 'broad', 'rules', 'skills', 'code', 'minimal'] as const;
type Style = (typeof STYLES)[number];

function assemble(findings: Finding[], env: Env, style: Style, rng: Rng): { patch: Patch; addresses: Finding['kind'][]; rationale: string[] } {
  // how many findings to address: the most widespread first
  const n = style === 'minimal' ? 1 : style === 'focused' ? Math.min(2, findings.length) : findings.length;
  const chosen = findings.slice(0, Math.max(1, n));
  const skills: string[] = [];
  const rules: Rule[] = [];
  const code: CodeHook[] = [];
  const rationale: string[] = [];
  for (const f of chosen) {
    const comps = componentsFor(f, env, rng);
    const want = (c: Component): boolean =>
      style === 'skills' ? c.skill !== undefined : style === 'rules' ? c.rule !== undefined : style === 'code' ? c.code !== undefined || c.rule !== undefined : true;
    let pool = comps.filter(want);
    if (pool.length === 0) pool = comps;
    // broad and focused take one or two mechanisms per finding; minimal one
    const take = style === 'minimal' ? 1 : style === 'focused' ? 2 : 1 + rng.int(2);
    for (const c of rng.shuffle(pool).slice(0, take)) {
      if (c.skill !== undefined && skills.length < 5 && !skills.includes(c.skill)) skills.push(c.skill);
      else if (c.rule && rules.length + code.length < 12 && !rules.some((r) => r.name === c.rule!.name)) rules.push(c.rule);
      else if (c.code && rules.length + code.length < 12 && !code.some((x) => x.name === c.code!.name)) code.push(c.code);
      else continue;
      rationale.push(c.why);
    }
  }
  const patch: Patch = {
    description: `prompted editor (${style}): addresses ${chosen.map((f) => f.kind).join(', ')}`,
    ...(skills.length ? { skills } : {}),
    ...(rules.length ? { rules } : {}),
    ...(code.length ? { code } : {}),
  };
  return { patch, addresses: chosen.map((f) => f.kind), rationale };
}

/**
 * Propose up to `k` distinct patches for a packet. Deterministic given (packet, seed); a packet
 * with no failures gets no proposals. Every proposal passes `toPatch`.
 *
 * @example
 * const proposals = teacherPropose(extractPacket(records), { k: 4, seed: 1 });
 */
export function teacherPropose(p: Packet, opts: { k?: number; seed?: number } = {}): Proposal[] {
  const k = opts.k ?? DEFAULT_K;
  const findings = diagnose(p);
  if (findings.length === 0) return [];
  const env = envOf(p);
  const rng = new Rng(hashString(`teacher|${packetHash(p)}|${opts.seed ?? 0}`));
  const out: Proposal[] = [];
  const seen = new Set<string>();
  for (let attempt = 0; out.length < k && attempt < k * 8; attempt++) {
    const style = rng.pick(STYLES);
    const a = assemble(findings, env, style, rng.fork(attempt));
    const patch = toPatch(a.patch);
    const hash = patchHash(patch);
    if (seen.has(hash)) continue;
    seen.add(hash);
    out.push({ patch, hash, addresses: a.addresses, rationale: a.rationale });
  }
  return out;
}
