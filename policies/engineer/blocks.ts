/**
 * Code blocks: small, parameterised pieces of hook code that the engineer composes into code
 * hooks. A code hook of the patch grammar is a hook point and a list of blocks with their
 * parameters; `composeSource` writes it out as one `function hook(ctx, nb)` (the sandbox runs that
 * source as it runs any code hook), and `parseComposed` reads the block list back from the source
 * (so a patch is in the grammar's space exactly when its source is what `composeSource` writes).
 *
 * Blocks run in order and share the episode's notebook: trackers write `nb` and say nothing,
 * emitters read `ctx` and `nb` and push a hint text or an effect onto `out`. What the hook returns
 * is decided at the end, per hook point: preDecision joins the texts into one hint (one short
 * hint per decision, not an accumulating log), postFeedback returns the first force_action or the
 * joined texts as one injected hint, preAction returns the first effect.
 *
 * Every block is tested in the real QuickJS sandbox (test/unit/engineer/blocks.test.ts).
 */
import type { HookName } from '../../harness/index.ts';

/** one parameter: the engineer picks one of `choices` (by index) */
export interface BlockParam {
  name: string;
  choices: readonly (number | string)[];
}

export interface Block {
  /** stable id, part of the grammar (`<blk:id>`) */
  id: string;
  /** hook points it may sit in */
  hooks: readonly HookName[];
  params: readonly BlockParam[];
  /** one line: what it does */
  doc: string;
  /** JS statements over `ctx`, `nb`, `out` and `P` (the parameter values) */
  body: string;
}

// shared helpers, defined once in every composed source
const HELPERS = `  function words(s) { return String(s).toLowerCase().match(/[a-z]+|[0-9]+/g) || []; }
  function list(k) { if (!Array.isArray(nb[k])) nb[k] = []; return nb[k]; }
  function remember(k, v, max) { var l = list(k); var i = l.indexOf(v); if (i >= 0) l.splice(i, 1); l.push(v); while (l.length > max) l.shift(); }
  function once(k) { if (nb[k] === ctx.step) return false; nb[k] = ctx.step; return true; }
  function noop() { return ctx.pred.nothingHappens || ctx.pred.sqlError || /^nothing happens|not a valid|invalid/i.test(ctx.last ? ctx.last.observation : ''); }`;

export const BLOCKS: readonly Block[] = [
  {
    id: 'track_failed',
    hooks: ['preDecision', 'preAction', 'postFeedback'],
    params: [{ name: 'max', choices: [4, 8, 12] }],
    doc: 'remember (in nb.failed, the newest max) the actions after which nothing happened or the SQL failed',
    body: `if (ctx.last && once('_tf') && noop()) remember('failed', ctx.last.action, P.max);`,
  },
  {
    id: 'track_visited',
    hooks: ['preDecision', 'preAction', 'postFeedback'],
    params: [{ name: 'max', choices: [6, 10, 16] }],
    doc: 'remember (in nb.visited) the places reached by "go to X" that worked',
    body: `if (ctx.last && once('_tv') && /^go to /.test(ctx.last.action) && !noop()) remember('visited', ctx.last.action.slice(6), P.max);`,
  },
  {
    id: 'track_held',
    hooks: ['preDecision', 'preAction', 'postFeedback'],
    params: [],
    doc: 'keep nb.held: the object taken by "take X from Y" until "put" or "move" worked',
    body: `if (ctx.last && once('_th') && !noop()) {
    var m = /^take (.+?) from /.exec(ctx.last.action);
    if (m) nb.held = m[1];
    else if (/^(put|move) /.test(ctx.last.action)) nb.held = null;
  }`,
  },
  {
    id: 'track_room',
    hooks: ['preDecision'],
    params: [],
    doc: 'keep nb.room: the places the first observation lists ("you see a cabinet 1, a drawer 2, …")',
    body: `if (!Array.isArray(nb.room)) {
    var first = ctx.step === 0 ? ctx.observation : '';
    var m = /you see (.*)/i.exec(first);
    nb.room = m ? (m[1].match(/[a-z]+ \\d+/gi) || []).slice(0, 40) : [];
  }`,
  },
  {
    id: 'closest_admissible',
    hooks: ['preAction'],
    params: [{ name: 'min', choices: [0.3, 0.4, 0.5, 0.6, 0.75] }],
    doc: 'rewrite a proposal that is not admissible to the most similar admissible action (word overlap, Dice) when the similarity is at least min; a free-text action (verb[text], e.g. WebShop\'s search[...]) whose verb no admissible action has is left alone',
    body: `var ft = ctx.proposed ? /^([a-z][a-z ]*)\\[/i.exec(ctx.proposed.action) : null;
  if (ft && ctx.admissible && !ctx.admissible.some(function (a) { return a.indexOf(ft[1] + '[') === 0; })) ft = 'free';
  if (ft !== 'free' && ctx.proposed && ctx.admissible && ctx.admissible.length && ctx.admissible.indexOf(ctx.proposed.action) < 0) {
    var a = words(ctx.proposed.action), best = null, bs = 0;
    for (var i = 0; i < ctx.admissible.length; i++) {
      var b = words(ctx.admissible[i]), common = 0, seen = {};
      for (var j = 0; j < b.length; j++) seen[b[j]] = (seen[b[j]] || 0) + 1;
      for (var j = 0; j < a.length; j++) if (seen[a[j]]) { seen[a[j]]--; common++; }
      var s = (2 * common) / (a.length + b.length || 1) + (a[0] === b[0] ? 0.05 : 0);
      if (s > bs) { bs = s; best = ctx.admissible[i]; }
    }
    if (best !== null && bs >= P.min) out.push({ type: 'rewrite_action', action: best });
  }`,
  },
  {
    id: 'block_failed',
    hooks: ['preAction'],
    params: [{ name: 'tries', choices: [1, 2] }],
    doc: 'block a proposal that is in nb.failed (asking again at most tries times)',
    body: `if (ctx.proposed && ctx.blocks < P.tries && list('failed').indexOf(ctx.proposed.action) >= 0) out.push({ type: 'block_and_prompt', message: "'" + ctx.proposed.action + "' did nothing before. Choose a different action." });`,
  },
  {
    id: 'block_repeat',
    hooks: ['preAction'],
    params: [{ name: 'run', choices: [2, 3, 4] }],
    doc: 'block a proposal that would make a run of run identical actions',
    body: `if (ctx.proposed && ctx.blocks === 0) {
    var h = ctx.history, n = 1;
    for (var i = h.length - 1; i >= 0 && h[i].action === ctx.proposed.action; i--) n++;
    if (n >= P.run) out.push({ type: 'block_and_prompt', message: "You already did '" + ctx.proposed.action + "' " + (n - 1) + ' times in a row. Do something else.' });
  }`,
  },
  {
    id: 'escape_loop',
    hooks: ['preAction'],
    params: [{ name: 'run', choices: [2, 3, 4] }],
    doc: 'when a proposal would repeat, for the run-th time, an action that did nothing, rewrite it to the first admissible action that is not in nb.failed',
    body: `if (ctx.proposed && ctx.admissible && noop()) {
    var h = ctx.history, n = 1;
    for (var i = h.length - 1; i >= 0 && h[i].action === ctx.proposed.action; i--) n++;
    if (n >= P.run) {
      var f = list('failed');
      for (var i = 0; i < ctx.admissible.length; i++) {
        var c = ctx.admissible[i];
        if (c !== ctx.proposed.action && f.indexOf(c) < 0 && !/^(look|inventory|help)$/.test(c)) { out.push({ type: 'rewrite_action', action: c }); break; }
      }
    }
  }`,
  },
  {
    id: 'explore_unvisited',
    hooks: ['preAction'],
    params: [{ name: 'when', choices: ['inadmissible', 'revisit'] }],
    doc: 'rewrite a "go to" that is not admissible (when revisit: or that goes back to a place in nb.visited) to the first admissible "go to" of a place not in nb.visited',
    body: `if (ctx.proposed && ctx.admissible && /^go to /.test(ctx.proposed.action)) {
    var v = list('visited'), bad = ctx.admissible.indexOf(ctx.proposed.action) < 0 || (P.when === 'revisit' && v.indexOf(ctx.proposed.action.slice(6)) >= 0);
    if (bad) for (var i = 0; i < ctx.admissible.length; i++) {
      var c = ctx.admissible[i];
      if (/^go to /.test(c) && c !== ctx.proposed.action && v.indexOf(c.slice(6)) < 0) { out.push({ type: 'rewrite_action', action: c }); break; }
    }
  }`,
  },
  {
    id: 'take_goal_object',
    hooks: ['preAction'],
    params: [],
    doc: 'with nothing in nb.held, rewrite the proposal to an admissible "take X from Y" whose object kind X the goal names (the goal object in view is taken)',
    body: `if (ctx.proposed && ctx.admissible && !(typeof nb.held === 'string' && nb.held) && !/^take /.test(ctx.proposed.action)) {
    var g = ' ' + words(ctx.task.goal).join(' ') + ' ';
    for (var i = 0; i < ctx.admissible.length; i++) {
      var m = /^take ([a-z]+) \\d+ from /.exec(ctx.admissible[i]);
      if (m && g.indexOf(' ' + m[1] + ' ') >= 0) { out.push({ type: 'rewrite_action', action: ctx.admissible[i] }); break; }
    }
  }`,
  },
  {
    id: 'finish_goal',
    hooks: ['preAction'],
    params: [],
    doc: 'holding an object (nb.held, or one its own tracking saw taken), rewrite the proposal to the admissible action that finishes the goal with it: heat/cool/clean it when the goal asks and it is not done yet, use a lamp the goal names, or put it in/on a receptacle the goal names after the object',
    body: `if (ctx.last && once('_fg') && !noop()) {
    var t = /^take (.+?) from /.exec(ctx.last.action);
    if (t) { nb._fgHeld = t[1]; nb._fgDone = false; }
    else if (/^(heat|cool|clean) /.test(ctx.last.action)) nb._fgDone = true;
    else if (/^(put|move) /.test(ctx.last.action)) { nb._fgHeld = null; nb._fgDone = false; }
  }
  var held = typeof nb.held === 'string' && nb.held ? nb.held : nb._fgHeld;
  if (ctx.proposed && ctx.admissible && typeof held === 'string' && held) {
    var g = ' ' + words(ctx.task.goal).join(' ') + ' ', kind = held.split(' ')[0], at = g.indexOf(' ' + kind + ' ');
    var need = /\\b(hot|heat)\\b/.test(g) ? 'heat' : /\\b(cool|cold)\\b/.test(g) ? 'cool' : /\\bclean\\b/.test(g) ? 'clean' : null;
    var act = null;
    for (var i = 0; i < ctx.admissible.length && act === null; i++) {
      var c = ctx.admissible[i], m;
      if (need && !nb._fgDone && c.indexOf(need + ' ' + held + ' with ') === 0) act = c;
      else if ((m = /^use ([a-z]+) \\d+$/.exec(c)) && g.indexOf(' ' + m[1] + ' ') >= 0) act = c;
      else if ((m = /^(?:put|move) (.+?) (?:in\\/on|to) ([a-z]+) \\d+$/.exec(c)) && m[1] === held && (!need || nb._fgDone) && at >= 0 && g.indexOf(' ' + m[2] + ' ', at + 1) > at) act = c;
    }
    if (act !== null && act !== ctx.proposed.action) out.push({ type: 'rewrite_action', action: act });
  }`,
  },
  {
    id: 'search_goal',
    hooks: ['preAction'],
    params: [{ name: 'words', choices: [6, 10, 16] }],
    doc: 'rewrite a search[...] to a search for the first `words` words of the goal (without the price clause and the "i am looking for" opening)',
    body: `if (ctx.proposed && /^search\\[/.test(ctx.proposed.action) && ctx.task.goal) {
    var g = String(ctx.task.goal).toLowerCase().split(/,? and price /)[0];
    g = g.replace(/^(i am|i'm|im|i|am)\\s+(looking for|interested in buying|interested in|want to buy|want to find|want to get|need to buy|need to find|need|want|would like)\\s+/, '');
    var q = words(g).slice(0, P.words).join(' ');
    if (q && 'search[' + q + ']' !== ctx.proposed.action) out.push({ type: 'rewrite_action', action: 'search[' + q + ']' });
  }`,
  },
  {
    id: 'select_options',
    hooks: ['preAction'],
    params: [],
    doc: 'rewrite a click[buy now] to a click on an option of the page that the goal names and that was not clicked since the product was opened (the longest first)',
    body: `if (ctx.proposed && ctx.proposed.action === 'click[buy now]' && ctx.admissible) {
    var g = ' ' + words(ctx.task.goal).join(' ') + ' ', clicked = [], best = null, bl = 0;
    for (var i = ctx.history.length - 1; i >= 0 && !/^click\\[<|^search\\[/.test(ctx.history[i].action); i--) clicked.push(' ' + words(ctx.history[i].action.slice(6, -1)).join(' ') + ' ');
    for (var i = 0; i < ctx.admissible.length; i++) {
      var c = ctx.admissible[i];
      if (/^click\\[(buy now|back to search|< prev|next >|description|features|reviews|attributes|<.*)\\]$/.test(c)) continue;
      var t = ' ' + words(c.slice(6, -1)).join(' ') + ' ', dup = false;
      if (t.length < 3 || g.indexOf(t) < 0) continue;
      for (var j = 0; j < clicked.length; j++) if (clicked[j].indexOf(t) >= 0) dup = true;
      if (!dup && t.length > bl) { best = c; bl = t.length; }
    }
    if (best !== null) out.push({ type: 'rewrite_action', action: best });
  }`,
  },
  {
    id: 'hint_failed',
    hooks: ['preDecision', 'postFeedback'],
    params: [{ name: 'max', choices: [3, 5, 8] }],
    doc: 'a hint naming the newest max actions in nb.failed',
    body: `var f = list('failed');
  if (f.length) out.push('These actions did nothing: ' + f.slice(-P.max).join('; ') + '. Do not try them again.');`,
  },
  {
    id: 'hint_visited',
    hooks: ['preDecision'],
    params: [{ name: 'max', choices: [4, 8, 12] }],
    doc: 'a hint naming the newest max places in nb.visited',
    body: `var v = list('visited');
  if (v.length >= 2) out.push('Already checked: ' + v.slice(-P.max).join(', ') + '.');`,
  },
  {
    id: 'hint_held',
    hooks: ['preDecision'],
    params: [],
    doc: 'a hint saying what nb.held holds',
    body: `if (typeof nb.held === 'string' && nb.held) out.push('You are holding the ' + nb.held + '.');`,
  },
  {
    id: 'suggest_unvisited',
    hooks: ['preDecision'],
    params: [{ name: 'n', choices: [1, 2, 3, 5] }],
    doc: 'a hint naming n places of nb.room not in nb.visited yet',
    body: `var r = Array.isArray(nb.room) ? nb.room : [], v = list('visited'), left = [];
  for (var i = 0; i < r.length && left.length < P.n; i++) if (v.indexOf(r[i]) < 0) left.push(r[i]);
  if (left.length && ctx.step > 0) out.push('Not checked yet: ' + left.join(', ') + '.');`,
  },
  {
    id: 'notes',
    hooks: ['preDecision'],
    params: [{ name: 'max', choices: [3, 5, 8] }],
    doc: 'one compact notes hint from the notebook (held, visited, failed), written anew each decision',
    body: `var parts = [];
  if (typeof nb.held === 'string' && nb.held) parts.push('holding ' + nb.held);
  var v = list('visited'), f = list('failed');
  if (v.length) parts.push('checked ' + v.slice(-P.max).join(', '));
  if (f.length) parts.push('did nothing: ' + f.slice(-P.max).join('; '));
  if (parts.length) out.push('Notes: ' + parts.join('. ') + '.');`,
  },
  {
    id: 'loop_hint',
    hooks: ['preDecision'],
    params: [{ name: 'run', choices: [2, 3, 4] }],
    doc: 'a hint when the last action ran run times or more in a row',
    body: `var h = ctx.history, n = h.length;
  if (n) {
    var a = h[n - 1].action, k = 1;
    for (var i = n - 2; i >= 0 && h[i].action === a; i--) k++;
    if (k >= P.run) out.push('You repeated "' + a + '" ' + k + ' times. Try something different.');
  }`,
  },
  {
    id: 'steps_hint',
    hooks: ['preDecision'],
    params: [{ name: 'frac', choices: [0.1, 0.2, 0.3, 0.5] }],
    doc: 'a hint once at most frac of the step budget is left',
    body: `if (ctx.limits.stepsLeft <= Math.ceil(ctx.limits.maxSteps * P.frac)) out.push('Only ' + ctx.limits.stepsLeft + ' steps are left: finish the task now.');`,
  },
  {
    id: 'goal_reminder',
    hooks: ['preDecision'],
    params: [{ name: 'every', choices: [5, 10, 15] }],
    doc: 'the goal again every `every` decisions',
    body: `if (ctx.step > 0 && ctx.step % P.every === 0 && ctx.task.goal) out.push('Remember the task: ' + String(ctx.task.goal).slice(0, 200));`,
  },
  {
    id: 'sql_explain',
    hooks: ['postFeedback'],
    params: [],
    doc: "after an SQL error, explain it with the schema's names read from the task (the table and its headers)",
    body: `if (ctx.pred.sqlError) {
    var o = String(ctx.observation), g = String(ctx.task.goal);
    var t = /name of this table is (.+?), and the headers/i.exec(g), hd = /headers of this table are (.+?)\\.\\s*$/i.exec(g);
    var tab = t ? t[1] : null, cols = hd ? hd[1] : null, m;
    if ((m = /Table '([^']+)' doesn't exist/i.exec(o))) out.push('There is no table ' + m[1].split('.').pop() + (tab ? '; the table is \`' + tab + '\`' : '') + '.');
    else if ((m = /Unknown column '([^']+)'/i.exec(o))) out.push('There is no column ' + m[1] + (cols ? '; the columns are ' + cols : '') + '. Quote text values with single quotes.');
    else if (/syntax/i.test(o)) out.push('The SQL has a syntax error. Write one plain statement' + (tab ? ' on \`' + tab + '\`' : '') + ', names in backticks, text values in single quotes.');
    else out.push('The query failed: ' + o.slice(0, 120));
  }`,
  },
];

export const BLOCK_INDEX: ReadonlyMap<string, Block> = new Map(BLOCKS.map((b) => [b.id, b]));

/** a block with the index of the chosen value of each parameter */
export interface BlockUse {
  id: string;
  params: number[];
}

const FINISH: Record<Exclude<HookName, 'init'>, string> = {
  preDecision: `  var texts = out.filter(function (x) { return typeof x === 'string'; });
  return texts.length ? texts.join(' ') : null;`,
  postFeedback: `  for (var i = 0; i < out.length; i++) if (out[i] && out[i].type === 'force_action') return out[i];
  var texts = out.filter(function (x) { return typeof x === 'string'; });
  return texts.length ? texts.join(' ') : null;`,
  preAction: `  for (var i = 0; i < out.length; i++) if (out[i] && typeof out[i] === 'object') return out[i];
  return null;`,
};

const MARK = '// hr1 blocks: ';

/** problems with a block list for a hook point (empty when it is fine) */
export function checkBlocks(hook: HookName, uses: readonly BlockUse[]): string[] {
  const out: string[] = [];
  if (hook === 'init') out.push('code blocks do not run at init');
  if (uses.length === 0) out.push('a composed hook has at least one block');
  uses.forEach((u, i) => {
    const b = BLOCK_INDEX.get(u.id);
    if (!b) return out.push(`block ${i}: unknown block ${JSON.stringify(u.id)}`);
    if (!b.hooks.includes(hook)) out.push(`block ${i}: ${u.id} runs in ${b.hooks.join(', ')}, not ${hook}`);
    if (u.params.length !== b.params.length) out.push(`block ${i}: ${u.id} takes ${b.params.length} parameters, got ${u.params.length}`);
    u.params.forEach((c, j) => {
      const p = b.params[j];
      if (p && !(Number.isInteger(c) && c >= 0 && c < p.choices.length)) out.push(`block ${i}: ${u.id}.${p.name} is a choice 0…${p.choices.length - 1}, got ${c}`);
    });
  });
  return out;
}

/** The source of a code hook made of `uses`, in order. Throws on a list `checkBlocks` refuses. */
export function composeSource(hook: HookName, uses: readonly BlockUse[]): string {
  const bad = checkBlocks(hook, uses);
  if (bad.length) throw new RangeError(`composeSource: ${bad.join('; ')}`);
  const parts = uses.map((u) => {
    const b = BLOCK_INDEX.get(u.id)!;
    const P = Object.fromEntries(b.params.map((p, j) => [p.name, p.choices[u.params[j]!]!]));
    return `  // ${b.id}\n  (function (P) {\n  ${b.body}\n  })(${JSON.stringify(P)});`;
  });
  return `${MARK}${JSON.stringify(uses.map((u) => [u.id, ...u.params]))}\nfunction hook(ctx, nb) {\n  var out = [];\n${HELPERS}\n${parts.join('\n')}\n${FINISH[hook as Exclude<HookName, 'init'>]}\n}`;
}

/** The block list of a composed source, or null when the source is not exactly what composeSource writes. */
export function parseComposed(hook: HookName, source: string): BlockUse[] | null {
  if (!source.startsWith(MARK)) return null;
  const line = source.slice(MARK.length, source.indexOf('\n'));
  let raw: unknown;
  try {
    raw = JSON.parse(line);
  } catch {
    return null;
  }
  if (!Array.isArray(raw)) return null;
  const uses: BlockUse[] = [];
  for (const x of raw) {
    if (!Array.isArray(x) || typeof x[0] !== 'string' || !x.slice(1).every((n) => Number.isInteger(n))) return null;
    uses.push({ id: x[0], params: x.slice(1) as number[] });
  }
  if (checkBlocks(hook, uses).length) return null;
  return composeSource(hook, uses) === source ? uses : null;
}
