/**
 * The teacher: the "prompted editor" baseline and the source of the cold-start SFT data. It reads
 * a packet, and only the packet (it never runs the target): the signals, and the episodes
 * themselves — the objects and places an action named that no observation showed, the place
 * visited again, the table or column an SQL error names, the purchase made without choosing an
 * option, the empty answer. For each failure it knows several mechanisms across the whole patch
 * language (skills that name what the packet saw, typed rules with condition trees over ctx
 * paths and every effect, code hooks composed from the blocks of blocks.ts with parameters), and
 * a seed picks a style, mechanisms, phrasings and parameters. Every proposal is a sentence of
 * the engineer's grammar (patch-lang.ts) for the packet's names (tested).
 * Deterministic given (packet, seed); different seeds give different proposals.
 */
import { ENV_NAMES, type EnvName } from '../../envs/registry.ts';
import { Rng, hashString } from '../../cluster/rng.ts';
import { MAX_ENTRIES, MAX_SKILLS, patchHash, toPatch, type CodeHook, type Cond, type HookName, type Patch, type Rule } from '../../harness/index.ts';
import { BLOCK_INDEX, composeSource, parseComposed, type BlockUse } from './blocks.ts';
import { alfSighting, packetHash, type Packet, type PacketEpisode } from './packet.ts';
import { ALF_NAME, packetNames, patchToTokens } from './patch-lang.ts';

/** Proposals per packet. @default 4 */
export const DEFAULT_K = 4;

export const FINDING_KINDS = [
  'loop', 'noop', 'invalid_format', 'sql_error', 'invalid_click', 'step_limit', 'early_finish', 'revisit',
  'hallucinated', 'missing_table', 'unknown_column', 'empty_answer', 'no_options', 'seen_target', 'off_query',
] as const;

/** A failure the teacher reads off a packet, with how many shown episodes show it. */
export interface Finding {
  kind: (typeof FINDING_KINDS)[number];
  episodes: number;
  /** one line of evidence, quoted from the packet */
  evidence: string;
  /** names the packet showed for it (a hallucinated object, a missing table, an unknown column) */
  names?: string[];
  /** seen_target: per failed episode, its goal, the goal's kind of object, the object an observation showed and the place it showed it at */
  seen?: { goal: string; word: string; object: string; place: string }[];
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


/** names an ALFWorld episode's actions used that none of its observations mentions, with a no-op */
function hallucinatedNames(e: PacketEpisode): string[] {
  const seen = e.excerpt.map((l) => l.observation.toLowerCase()).join(' ');
  const out: string[] = [];
  for (const l of e.excerpt) {
    if (!l.flags.includes('N')) continue;
    for (const m of l.action.matchAll(ALF_NAME)) {
      const n = m[1]!;
      if (!seen.includes(n) && !out.includes(n)) out.push(n);
    }
  }
  return out;
}

/** Read the failures off a packet, most widespread first (ties by kind). */
export function diagnose(p: Packet): Finding[] {
  const eps = p.episodes;
  const out: Finding[] = [];
  const add = (kind: Finding['kind'], n: number, evidence: string, names?: string[]): void => {
    if (n > 0) out.push({ kind, episodes: n, evidence, ...(names && names.length ? { names: names.slice(0, 6) } : {}) });
  };
  const loops = eps.filter((e) => e.signals.longestRun >= 3);
  const top = loops.flatMap((e) => e.signals.repeatedActions.slice(0, 1)).sort((a, b) => b.count - a.count)[0];
  add('loop', loops.length, top ? `"${top.action}" repeated ×${top.count}` : '');
  add('noop', eps.filter((e) => e.signals.noOps > 0).length, `${p.totals.noOps.count} "nothing happens" observations`);
  add('invalid_format', eps.filter((e) => e.signals.invalidFormats > 0 || e.status === 'invalid_format').length, `${p.totals.invalidFormats.count} outputs that did not parse`);
  add('sql_error', eps.filter((e) => e.signals.sqlErrors > 0).length, `${p.totals.sqlErrors.count} SQL errors`);
  add('invalid_click', eps.filter((e) => e.signals.invalidClicks > 0).length, `${p.totals.invalidClicks.count} invalid clicks`);
  add('step_limit', eps.filter((e) => e.status === 'step_limit').length, `${p.totals.stepLimit.episodes} episodes hit the step limit`);
  add('early_finish', eps.filter((e) => e.status === 'failed' && e.steps <= 3 && e.signals.sqlErrors === 0 && e.signals.invalidFormats === 0).length, 'failed episodes that ended within 3 steps');
  const revisits = eps.filter((e) => {
    const go = e.excerpt.filter((l) => /^go to /.test(l.action)).map((l) => l.action);
    return go.length !== new Set(go).size;
  });
  const placeAgain = revisits.flatMap((e) => {
    const go = e.excerpt.filter((l) => /^go to /.test(l.action)).map((l) => l.action.slice(6));
    return go.filter((x, i) => go.indexOf(x) !== i);
  });
  add('revisit', revisits.length, 'places visited again after leaving them', [...new Set(placeAgain)]);
  // what the excerpts themselves show
  const hall = eps.map(hallucinatedNames);
  add('hallucinated', hall.filter((h) => h.length > 0).length, `actions named ${[...new Set(hall.flat())].slice(0, 4).join(', ')}, which no observation showed`, [...new Set(hall.flat())]);
  const errs = (re: RegExp) => eps.map((e) => e.excerpt.flatMap((l) => [...l.observation.matchAll(re)].map((m) => m[1]!.split('.').pop()!)));
  const tables = errs(/Table '([^']+)' doesn't exist/gi);
  add('missing_table', tables.filter((x) => x.length).length, `tables that do not exist: ${[...new Set(tables.flat())].join(', ')}`, [...new Set(tables.flat())]);
  const cols = errs(/Unknown column '([^']+)'/gi);
  add('unknown_column', cols.filter((x) => x.length).length, `columns that do not exist: ${[...new Set(cols.flat())].join(', ')}`, [...new Set(cols.flat())]);
  add('empty_answer', eps.filter((e) => e.excerpt.some((l) => /Final Answer:\s*\[\s*\]/.test(l.action))).length, 'answers that were an empty list');
  add('no_options', eps.filter((e) => e.excerpt.some((l) => l.action === 'click[buy now]') && !e.excerpt.some((l) => /^click\[/.test(l.action) && !/^click\[(buy now|<product|back to search|next|prev|description|features|reviews|attributes)/i.test(l.action))).length, 'purchases made without choosing an option');
  // WebShop searches whose words are not the instruction's (a word the goal does not have, or one said twice)
  const offQuery = eps.flatMap((e) => {
    const goal = new Set(e.goal.toLowerCase().match(/[a-z]+|[0-9]+/g) ?? []);
    return e.excerpt.filter((l) => /^search\[/.test(l.action)).flatMap((l) => {
      const w = l.action.slice(7, -1).toLowerCase().match(/[a-z]+|[0-9]+/g) ?? [];
      return w.some((x) => !goal.has(x)) || new Set(w).size < w.length ? [l.action] : [];
    }).slice(0, 1);
  });
  add('off_query', offQuery.length, `searches that are not the instruction's words: ${offQuery.slice(0, 2).join(', ')}`);
  // the object the goal asks for, seen in an observation (ALFWorld): where it was
  const seen = eps.flatMap((e) => alfSighting(e) ?? []);
  if (seen.length) out.push({ kind: 'seen_target', episodes: seen.length, evidence: seen.map((x) => `${x.object} at ${x.place}`).join(', '), seen, names: [...new Set(seen.flatMap((x) => [x.goal, x.object, x.place]))] });
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

function code(rng: Rng, name: string, hook: HookName, blocks: [string, ...(number | 'r')[]][]): CodeHook {
  const uses: BlockUse[] = blocks.map(([id, ...ps]) => {
    const b = BLOCK_INDEX.get(id)!;
    return { id, params: b.params.map((p, j) => (ps[j] === 'r' || ps[j] === undefined ? rng.int(p.choices.length) : (ps[j] as number))) };
  });
  return { name, hook, source: composeSource(hook, uses) };
}

function rule(name: string | undefined, hook: HookName, when: Cond | undefined, effect: Rule['effect']): Rule {
  return { ...(name ? { name } : {}), hook, ...(when ? { when } : {}), effect } as Rule;
}

/** The components a finding suggests, for one env. Each call draws phrasings and parameters. */
export function componentsFor(f: Finding, env: Env, rng: Rng): Component[] {
  const pick = <T>(xs: readonly T[]): T => rng.pick(xs);
  const name = f.names?.[0];
  switch (f.kind) {
    case 'hallucinated':
      return [
        { code: code(rng, 'closest', 'preAction', [['closest_admissible', 'r']]), why: `hallucinated names (${f.evidence}): rewrite an impossible action to the closest admissible one` },
        { rule: rule('inadmissible', 'preAction', { pred: 'proposedInadmissible' }, { type: 'block_and_prompt', message: pick(["'{{proposed.action}}' is not possible here. Only choose from the admissible actions, with the exact object names and numbers.", "'{{proposed.action}}' is not a valid action here. Use only the places and objects you have seen."]) }), why: 'hallucinated names: ask again when the proposal is not admissible' },
        ...(name ? [{ skill: `There is no ${name} in this room. Use only the places and objects you have seen.`, why: `hallucinated names: name the one the packet saw (${name})` }] : []),
        ...(name ? [{ rule: rule('guard', 'preAction', { all: [{ pred: 'proposedInadmissible' }, { path: 'proposed.action', contains: name }] }, { type: 'block_and_prompt', message: `There is no ${name} in this room. Use the exact names from the observation.` }), why: `hallucinated names: block actions on ${name}` }] : []),
        { code: code(rng, 'failed-actions', 'preAction', [['track_failed', 'r'], ['block_failed', 'r']]), why: 'hallucinated names: remember what did nothing and block it' },
        ...(env === 'alfworld' ? [{ code: code(rng, 'explore', 'preAction', [['track_visited', 'r'], ['explore_unvisited', 0]]), why: 'hallucinated names: a "go to" of a place that is not there goes to one not visited yet' }] : []),
      ];
    case 'noop':
      return [
        { rule: rule('nothing-happens', 'postFeedback', { pred: 'nothingHappens' }, { type: 'inject_hint', message: pick(['Nothing happens means the action was not valid. Try a different action.', "'{{last.action}}' did nothing last time; Choose a different action.", 'Nothing happens means the action was not valid. Use the exact names from the observation.']) }), why: `no-op observations (${f.evidence}): explain right after a "Nothing happens."` },
        { code: code(rng, 'failed-actions', 'postFeedback', [['track_failed', 'r'], ['hint_failed', 'r']]), why: 'no-op observations: remember actions that did nothing and list them' },
        { code: code(rng, 'fix', 'preAction', [['track_failed', 'r'], ['escape_loop', 'r']]), why: 'no-op observations: after repeated no-ops, play an admissible action that has not failed' },
        ...(env === 'alfworld' ? [{ skill: 'Go to a receptacle before you interact with it, and open it first if it is closed.', why: 'no-op observations: preconditions of ALFWorld actions' }] : []),
        ...(env === 'alfworld' ? [{ rule: rule('inadmissible', 'preAction', { all: [{ pred: 'proposedInadmissible' }, { path: 'proposed.action', matches: '^go to' }] }, { type: 'block_and_prompt', message: "There is no such place. Only choose from the admissible actions, with the exact object names and numbers." }), why: 'no-op observations: a `go to` that is not admissible is asked again' }] : []),
        ...(env === 'alfworld' ? [{ code: code(rng, 'explore', 'preAction', [['track_visited', 'r'], ['explore_unvisited', 0]]), why: 'no-op observations: a `go to` that is not admissible goes to a place not visited yet instead' }] : []),
      ];
    case 'loop':
      return [
        { rule: rule('no-repeat', 'preAction', { all: [{ pred: 'proposedRepeatsLast' }, { pred: 'nothingHappens' }] }, { type: 'block_and_prompt', message: pick(["'{{proposed.action}}' did nothing last time; Try a different action.", 'Repeating the last action will not help. Choose a different action.']) }), why: `loop (${f.evidence}): block a repeat of an action that did nothing` },
        { code: code(rng, 'no-repeat', 'preAction', [['block_repeat', 'r']]), why: 'loop: block a run of identical actions' },
        { code: code(rng, 'loop-counter', 'preDecision', [['loop_hint', 'r']]), why: 'loop: name the run of the last action in a hint' },
        { skill: pick(['Do not repeat the same action. If an action did not change anything, choose another one.', 'You seem stuck in a loop: Do not repeat the same action.']), why: 'loop: a skill against repeating actions' },
        { rule: rule('loop-hint', 'preDecision', { pred: 'repeatedAction' }, { type: 'hint', message: "You repeated '{{last.action}}'. Try a different action." }), why: 'loop: a hint before deciding, after a repeat' },
      ];
    case 'revisit':
      return [
        { code: code(rng, 'visited', 'preDecision', [['track_visited', 'r'], ['hint_visited', 'r']]), why: `revisits (${f.evidence}): a notebook of visited places, shown as a hint` },
        { code: code(rng, 'notes', 'preDecision', [['track_held'], ['track_visited', 'r'], ['track_failed', 'r'], ['notes', 'r']]), why: 'revisits: one compact notes line (held, checked, failed) each decision' },
        ...(env === 'alfworld' ? [{ code: code(rng, 'visited', 'preDecision', [['track_room'], ['track_visited', 'r'], ['suggest_unvisited', 'r']]), why: 'revisits: suggest places of the room not checked yet' }] : []),
        ...(env === 'alfworld' ? [{ code: code(rng, 'explore', 'preAction', [['track_visited', 'r'], ['explore_unvisited', 'r']]), why: 'revisits: a `go to` that is not admissible (or goes back) goes to a place not visited yet' }] : []),
        { skill: 'Keep track of the places you already checked and do not go back to them.', why: 'revisits: keep track of visited places' },
        ...(name ? [{ rule: rule('visited', 'preAction', { all: [{ path: 'proposed.action', equals: `go to ${name}` }, { path: 'nb.visited', contains: name }] }, { type: 'block_and_prompt', message: `You already checked ${name}. Choose a different action.` }), why: `revisits: ${name} was visited again in the packet` }] : []),
      ];
    case 'step_limit':
      return [
        { rule: rule('steps-left', 'preDecision', { pred: 'stepLimitNear' }, { type: 'hint', message: pick(['Only a few steps are left. Finish the task now.', 'Only a few steps are left. Stop searching and complete the goal with the fewest actions.']) }), why: `step limit (${f.evidence}): warn when few steps are left` },
        { code: code(rng, 'step-budget', 'preDecision', [['steps_hint', 'r']]), why: 'step limit: warn at a fraction of the budget' },
        { rule: rule('steps-left', 'preDecision', { path: 'limits.stepsLeft', lte: pick([5, 8, 10]) }, { type: 'hint', message: 'Only {{limits.stepsLeft}} steps are left. Finish the task now.' }), why: 'step limit: a countdown hint' },
        ...(env === 'alfworld' ? [{ code: code(rng, 'held', 'preDecision', [['track_held'], ['hint_held']]), why: 'step limit: say what is held, so the agent goes to put it' }] : []),
        ...(env === 'alfworld' ? [{ code: code(rng, 'take', 'preAction', [['track_held'], ['take_goal_object'], ['finish_goal']]), why: 'step limit: take the goal\'s object as soon as it is in reach, instead of walking past it, and finish the goal with it when the finishing action is there' }] : []),
        ...(env === 'alfworld' ? [{ code: code(rng, 'take', 'preAction', [['track_held'], ['track_visited', 'r'], ['take_goal_object'], ['explore_unvisited', 0]]), why: 'step limit: take the goal\'s object when in reach; a `go to` of a place that is not there goes to an unvisited one' }] : []),
        ...(env === 'alfworld' ? [{ code: code(rng, 'finish', 'preAction', [['track_held'], ['finish_goal']]), why: 'step limit: holding the goal\'s object, play the action that finishes the goal (heat, cool or clean it, use the lamp, put it where the goal says) as soon as it is there, instead of carrying it around' }] : []),
        { code: code(rng, 'loop-counter', 'preDecision', [['goal_reminder', 'r']]), why: 'step limit: the goal again every few steps' },
      ];
    case 'invalid_format':
      return [
        { skill: env === 'dbbench' ? 'Respond with exactly one action in the required format. Action: Operation with one sql block, or Action: Answer with Final Answer: [...].' : 'Respond with exactly one action and nothing else.', why: `invalid formats (${f.evidence}): state the output format` },
        { rule: rule('format-hint', 'preDecision', { pred: 'invalidFormat' }, { type: 'hint', message: 'Your last reply was not in the required format. Respond with exactly one action in the required format.' }), why: 'invalid formats: remind after a reply that did not parse' },
        { rule: rule('format-block', 'preAction', { pred: 'invalidFormat' }, { type: 'block_and_prompt', message: 'Respond with exactly one action in the required format.' }), why: 'invalid formats: ask again instead of executing an unparsable reply' },
        { rule: rule(undefined, 'init', undefined, { type: 'tool_hint', text: 'Respond with exactly one action and nothing else.' }), why: 'invalid formats: a tool hint at the start' },
      ];
    case 'sql_error':
      return [
        { code: code(rng, 'sql-error', 'postFeedback', [['sql_explain']]), why: `SQL errors (${f.evidence}): explain the error with the task's table and headers` },
        { skill: 'Before writing SQL, check the table and column names against the headers given in the task; wrap names with spaces in backticks and quote string values with single quotes.', why: 'SQL errors: quoting and names' },
        { rule: rule('sql-error', 'postFeedback', { pred: 'sqlError' }, { type: 'inject_hint', message: pick(['The query failed. Read the error message and fix the query.', 'The query failed: {{observation}}. Read the error message and fix the query.']) }), why: 'SQL errors: read the error and fix the query' },
        { rule: rule('sql-error', 'postFeedback', { path: 'observation', matches: 'syntax', flags: 'i' }, { type: 'inject_hint', message: 'The query failed. Use the exact table name given in the task, in backticks.' }), why: 'SQL errors: a syntax error names the fix' },
      ];
    case 'missing_table':
      return [
        { code: code(rng, 'no-table', 'postFeedback', [['sql_explain']]), why: `missing tables (${f.evidence}): name the task's table after the error` },
        { rule: rule('no-table', 'postFeedback', { path: 'observation', matches: "doesn't exist", flags: 'i' }, { type: 'inject_hint', message: 'Use the exact table name given in the task, in backticks.' }), why: 'missing tables: a missing table names the fix' },
        ...(name ? [{ skill: `There is no ${name} in this database. Use the exact table name given in the task, in backticks.`, why: `missing tables: name the one the packet saw (${name})` }] : []),
      ];
    case 'unknown_column':
      return [
        { code: code(rng, 'no-column', 'postFeedback', [['sql_explain']]), why: `unknown columns (${f.evidence}): list the task's headers after the error` },
        ...(name ? [{ rule: rule('no-column', 'postFeedback', { path: 'observation', contains: 'Unknown column' }, { type: 'inject_hint', message: `There is no column ${name}. Use the exact names from the observation.` }), why: `unknown columns: name the one the packet saw (${name})` }] : []),
        { skill: 'Before writing SQL, check the table and column names against the headers given in the task; wrap names with spaces in backticks and quote string values with single quotes.', why: 'unknown columns: check names against the headers' },
      ];
    case 'empty_answer':
      return [
        { skill: 'Do not answer until you have run a query that gives the answer.', why: `empty answers (${f.evidence}): query before answering` },
        { rule: rule('answer-check', 'preAction', { all: [{ path: 'proposed.action', contains: 'Final Answer: []' }, { path: 'blocks', equals: 0 }] }, { type: 'block_and_prompt', message: 'Do not answer until you have run a query that gives the answer.' }), why: 'empty answers: ask again once when the answer is an empty list' },
        { rule: rule('answer-check', 'preAction', { all: [{ path: 'task.type', matches: '^INSERT|^UPDATE|^DELETE' }, { path: 'step', equals: 0 }, { not: { path: 'proposed.action', matches: 'insert|update|delete', flags: 'i' } }] }, { type: 'block_and_prompt', message: 'The task asks to change the table: run the {{task.type}} statement first.' }), why: 'empty answers: a task that changes the table starts with that statement' },
      ];
    case 'no_options':
      return [
        { rule: rule('buy-check', 'preAction', { all: [{ path: 'proposed.action', equals: 'click[buy now]' }, { path: 'blocks', equals: 0 }, { path: 'step', lt: pick([3, 4, 5]) }] }, { type: 'block_and_prompt', message: 'Before buying, select the options the instruction names (size, color), then check the price and buy.' }), why: `purchases without options (${f.evidence}): ask for the options once before buying` },
        { skill: 'Before buying, select the options the instruction names (size, color), then check the price and buy.', why: 'purchases without options: choose options first' },
        { skill: 'Search with the words of the instruction: the product type and its key attributes. Pick the result whose title matches the instruction best.', why: 'purchases without options: search and pick by the instruction' },
        { code: code(rng, 'options', 'preAction', [['select_options']]), why: 'purchases without options: before buying, click the options of the page the instruction names' },
      ];
    case 'off_query':
      return [
        { code: code(rng, 'query', 'preAction', [['search_goal', 'r']]), why: `searches off the instruction (${f.evidence}): search with the instruction's own words` },
        { code: code(rng, 'query', 'preAction', [['search_goal', 'r'], ['select_options']]), why: "searches off the instruction: search with the instruction's words; before buying, click the options it names" },
        { skill: 'Search with the words of the instruction: the product type and its key attributes. Pick the result whose title matches the instruction best.', why: 'searches off the instruction: a skill to search with its words' },
      ];
    case 'invalid_click':
      return [
        { rule: rule('bad-click', 'postFeedback', { pred: 'nothingHappens' }, { type: 'inject_hint', message: 'Only click buttons shown on the current page, using their exact text.' }), why: `invalid clicks (${f.evidence})` },
        { code: code(rng, 'closest', 'preAction', [['closest_admissible', 'r']]), why: 'invalid clicks: rewrite to the closest button on the page' },
        { rule: rule('click-block', 'preAction', { pred: 'proposedInadmissible' }, { type: 'block_and_prompt', message: "'{{proposed.action}}' is not a valid action here. Only choose from the admissible actions, with the exact object names and numbers." }), why: 'invalid clicks: block clicks that are not on the page' },
      ];
    case 'seen_target': {
      // the excerpt showed where a failed goal's object was: on a rerun of that task, go there
      // first and take it when it is in view (the rules match that goal only)
      const known = (f.seen ?? []).filter((x) => [x.goal, x.object, x.place].every((n) => (f.names ?? []).includes(n))).slice(0, MAX_ENTRIES / 2);
      if (known.length === 0) return [];
      const hint = pick([false, false, true]);
      return known.flatMap((x) => [
        { rule: rule(undefined, 'preAction', { all: [{ path: 'task.goal', contains: x.goal }, { path: 'step', equals: 0 }] }, { type: 'rewrite_action', action: `go to ${x.place}` }), why: `seen target: the excerpt of "${x.goal}" showed ${x.object} at ${x.place}; start there` },
        hint
          ? { rule: rule(undefined, 'preDecision', { all: [{ path: 'task.goal', contains: x.goal }, { path: 'last.observation', contains: x.object }] }, { type: 'hint', message: `Take the ${x.object} from the ${x.place}.` }), why: `seen target: with ${x.object} in view, say to take it` }
          : { rule: rule(undefined, 'preAction', { all: [{ path: 'task.goal', contains: x.goal }, { path: 'last.action', equals: `go to ${x.place}` }, { path: 'last.observation', contains: x.object }] }, { type: 'rewrite_action', action: `take ${x.object} from ${x.place}` }), why: `seen target: at ${x.place}, with ${x.object} in view, take it` },
      ]);
    }
    case 'early_finish':
      return [
        { skill: env === 'dbbench' ? 'Do not answer until you have run a query that gives the answer.' : env === 'webshop' ? 'Before buying, select the options the instruction names (size, color), then check the price and buy.' : 'Check that every part of the goal is done before you finish.', why: `early finish (${f.evidence}): verify before finishing` },
        ...(env === 'alfworld' ? [{ rule: rule('held', 'init', undefined, { type: 'note', key: 'stage', value: 'search' }), why: 'early finish: start a stage note' }] : []),
      ];
  }
}

/** proposal styles an editor might take; a seed picks among them */
const STYLES = ['focused', 'broad', 'rules', 'skills', 'code', 'minimal', 'evidence', 'act'] as const;
type Style = (typeof STYLES)[number];

/** blocks that change the action rather than add text */
const ACTING_BLOCKS: ReadonlySet<string> = new Set(['closest_admissible', 'escape_loop', 'explore_unvisited', 'take_goal_object', 'finish_goal', 'search_goal', 'select_options']);

/** a component that acts (rewrites or forces an action) and adds no text to the context: what an 'act' proposal is made of */
function acts(c: Component): boolean {
  if (c.rule) return c.rule.effect.type === 'rewrite_action' || c.rule.effect.type === 'force_action';
  if (c.code) {
    const ids = (parseComposed(c.code.hook, c.code.source) ?? []).map((u) => u.id);
    return ids.some((id) => ACTING_BLOCKS.has(id)) && !ids.some((id) => /^(hint_|suggest_|notes|loop_hint|steps_hint|goal_reminder|sql_explain|block_)/.test(id));
  }
  return false;
}

/** findings read off the excerpts themselves (names, errors, sightings), not off the signal counts */
const EVIDENCE: ReadonlySet<Finding['kind']> = new Set(['hallucinated', 'missing_table', 'unknown_column', 'empty_answer', 'no_options', 'seen_target', 'off_query']);

function assemble(all: Finding[], env: Env, style: Style, rng: Rng): { patch: Patch; addresses: Finding['kind'][]; rationale: string[] } {
  // an evidence proposal answers only what the excerpts showed (a focused one when they showed nothing)
  const evidence = all.filter((f) => EVIDENCE.has(f.kind));
  // an acting proposal answers the findings that have an acting fix, with those fixes only (a focused one when none has)
  const acting = style === 'act' ? all.filter((f) => componentsFor(f, env, rng.fork(`act|${f.kind}`)).some(acts)) : [];
  const findings = style === 'evidence' && evidence.length > 0 ? evidence : style === 'act' && acting.length > 0 ? acting : all;
  if (style === 'evidence' || (style === 'act' && acting.length === 0)) style = 'focused';
  const n = style === 'minimal' ? 1 : style === 'focused' ? Math.min(2, findings.length) : Math.min(4, findings.length);
  // the most widespread first; a seed sometimes leads with the second; a broad proposal adds others at random
  const lead = findings.length > 1 && rng.next() < 0.3 ? [findings[1]!, findings[0]!] : findings.slice(0, 2);
  const order = style === 'focused' || style === 'minimal' ? [...lead, ...findings.slice(2)] : [lead[0]!, ...rng.shuffle([...lead.slice(1), ...findings.slice(2)])];
  const chosen = order.slice(0, Math.max(1, n));
  const skills: string[] = [];
  const rules: Rule[] = [];
  const code: CodeHook[] = [];
  const names = new Set<string>();
  const rationale: string[] = [];
  for (const f of chosen) {
    const comps = componentsFor(f, env, rng);
    const want = (c: Component): boolean => (style === 'skills' ? c.skill !== undefined : style === 'rules' ? c.rule !== undefined : style === 'code' ? c.code !== undefined : style === 'act' ? acts(c) : true);
    let pool = comps.filter(want);
    if (pool.length === 0) pool = comps;
    // a finding of per-episode facts (where each goal's object was seen) is written out whole, in
    // order, up to the patch's entry limit; any other takes one or two of its components
    const whole = f.kind === 'seen_target';
    const take = whole ? comps.length : style === 'minimal' || style === 'act' ? 1 : style === 'focused' ? 2 : 1 + rng.int(2);
    for (const c of whole ? comps : rng.shuffle(pool).slice(0, take)) {
      const nm = c.rule?.name ?? c.code?.name;
      if (nm && names.has(nm)) continue;
      if (c.skill !== undefined) {
        if (skills.length >= 3 || skills.includes(c.skill)) continue;
        skills.push(c.skill);
      } else if (rules.length + code.length >= (whole ? MAX_ENTRIES : 5)) continue;
      else if (c.rule) rules.push(c.rule);
      else code.push(c.code!);
      if (nm) names.add(nm);
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
 * The patch cut to what the engineer's grammar can write for the packet's names (its token budget):
 * hooks dropped from the end (a finding written out whole, such as seen_target, loses its last
 * goals first), then skills. Every proposal is therefore a sentence of the grammar.
 */
function fitGrammar(patch: Patch, names: readonly string[]): Patch {
  let p = patch;
  while (patchToTokens(p, names) === null) {
    const rules = p.rules ?? [];
    const code = p.code ?? [];
    const skills = p.skills ?? [];
    if (rules.length + code.length + skills.length <= 1) return p;
    if (code.length > 0 && rules.length === 0) p = { ...p, code: code.slice(0, -1) };
    else if (rules.length > 0) p = { ...p, rules: rules.slice(0, -1) };
    else p = { ...p, skills: skills.slice(0, -1) };
    for (const k of ['rules', 'code', 'skills'] as const) if (p[k]?.length === 0) delete p[k];
  }
  return p;
}

/**
 * All of the teacher's components for one kind of finding, as one patch (skills deduplicated, at
 * most MAX_SKILLS; hooks deduplicated by name, at most MAX_ENTRIES), or null when the packet does
 * not show that finding. An ablation: which finding's fixes carry a gain (`hr1 bench conditioning
 * --engineer teacher:KIND`).
 */
export function teacherForFinding(p: Packet, kind: Finding['kind'], opts: { seed?: number } = {}): Proposal | null {
  const known = new Set(packetNames(p));
  const f = diagnose(p).find((x) => x.kind === kind);
  if (!f) return null;
  const comps = componentsFor({ ...f, ...(f.names ? { names: f.names.filter((n) => known.has(n)) } : {}) }, envOf(p), new Rng(`teacher:${kind}|${opts.seed ?? 0}`));
  const skills = [...new Set(comps.flatMap((c) => (c.skill !== undefined ? [c.skill] : [])))].slice(0, MAX_SKILLS);
  const names = new Set<string>();
  const hooks = comps
    .filter((c) => c.rule || c.code)
    .filter((c) => {
      const n = c.rule?.name ?? c.code?.name;
      if (n && names.has(n)) return false;
      if (n) names.add(n);
      return true;
    })
    .slice(0, MAX_ENTRIES);
  if (skills.length + hooks.length === 0) return null;
  const rules = hooks.flatMap((c) => (c.rule ? [c.rule] : []));
  const code = hooks.flatMap((c) => (c.code ? [c.code] : []));
  const patch = toPatch(fitGrammar({ v: 1, description: `prompted editor (${kind} only)`, ...(skills.length ? { skills } : {}), ...(rules.length ? { rules } : {}), ...(code.length ? { code } : {}) } as Patch, [...known]));
  return { patch, hash: patchHash(patch), addresses: [kind], rationale: [...comps.filter((c) => c.skill !== undefined && skills.includes(c.skill)), ...hooks].map((c) => c.why) };
}

/**
 * Propose up to `k` distinct patches for a packet. Deterministic given (packet, seed, kinds); a
 * packet with no failures (or, with `kinds`, no finding of those kinds) gets no proposals. Every
 * proposal passes `toPatch` and is a sentence of the engineer's grammar for the packet's names.
 *
 * @example
 * const proposals = teacherPropose(extractPacket(records), { k: 4, seed: 1 });
 */
export function teacherPropose(p: Packet, opts: { k?: number; seed?: number; kinds?: readonly Finding['kind'][] } = {}): Proposal[] {
  const k = opts.k ?? DEFAULT_K;
  // `kinds`: answer only findings of these kinds (a teacher restricted to, e.g., what the excerpts showed)
  const findings = opts.kinds ? diagnose(p).filter((f) => opts.kinds!.includes(f.kind)) : diagnose(p);
  if (findings.length === 0) return [];
  const env = envOf(p);
  // names the grammar can copy: a finding's names are kept only when the packet's names section has them
  const known = new Set(packetNames(p));
  const usable = findings.map((f) => (f.names ? { ...f, names: f.names.filter((n) => known.has(n)) } : f));
  const rng = new Rng(hashString(`teacher|${packetHash(p)}|${opts.seed ?? 0}`));
  const out: Proposal[] = [];
  const seen = new Set<string>();
  for (let attempt = 0; out.length < k && attempt < k * 8; attempt++) {
    const style = rng.pick(STYLES);
    const a = assemble(usable, env, style, rng.fork(attempt));
    const patch = toPatch(fitGrammar(toPatch(a.patch), [...known]));
    const hash = patchHash(patch);
    if (seen.has(hash)) continue;
    seen.add(hash);
    out.push({ patch, hash, addresses: a.addresses, rationale: a.rationale });
  }
  return out;
}
