/**
 * Hint segments for behaviour-cloning contexts: the kinds of text a harness adds (skills in the
 * system message, `Hint: …` turns before a decision, hints injected after an observation), drawn
 * at random so that a trained model has seen hints and can read them. Phrasings follow the
 * teacher's patches and the sim targets' hint patterns (admissible lists, notebook notes, warnings).
 */
import type { Rng } from '../../../cluster/rng.ts';
import type { ChatMessage } from '../../../harness/index.ts';

/** skill texts (appended to the system message after "Skills:") */
export const SKILL_BANK: readonly string[] = [
  'Never repeat the same action more than twice in a row. If an action did not change the situation, try a different action.',
  'If you notice you are stuck doing the same thing, stop and try something different: another location, another object, or another command.',
  'Go to a receptacle before you interact with it, and open it first if it is closed. Use the exact object names and numbers you see.',
  'Output format: respond with exactly one action and nothing else, e.g. "go to cabinet 1" or "take apple 1 from countertop 2".',
  'Check that every part of the goal is done (find, take, clean/heat/cool if asked, then put) before you put the object down.',
  'Keep track of the places you already checked and do not go back to them unless you left something there.',
  'Remember what you have already looked at: do not return to a location you already searched.',
  'To heat an object, take it to the microwave and heat it with the microwave. To cool it, use the fridge. To clean it, use the sinkbasin.',
  'Objects are often inside closed receptacles such as drawers, cabinets and the fridge: open them to look inside.',
  'Before buying, verify the product matches every requirement: select the options (size, color) first, then buy.',
  'Search with the key words of the instruction, click a matching product, choose the options, then click buy now.',
];

/** warnings (hint turns or injected after an observation) */
export const WARNING_BANK: readonly string[] = [
  'You repeated the same action; you are stuck in a loop. Try something different.',
  'Nothing happened, so that action did not work. Use only valid actions with the exact names from the observation.',
  'That had no effect. When nothing happens, do not try the same action again; read the last observation and pick an available action.',
  'Only a few steps are left. Finish the task now: do the remaining steps directly, without exploring.',
  'You are close to the step limit. Stop searching and complete the goal with the fewest actions.',
  'Your last reply was not in the required format. Respond with exactly one action in the required format.',
  'Format check: reply with one action only, in the format of the instructions.',
  'Invalid click. Use only the available actions on this page (their exact text), or go back and search again.',
  'Do not put the object down before you have done every step the goal asks for; verify the goal first.',
];

/** templates whose slot `{x}` is filled from the episode */
export const TEMPLATE_BANK: readonly string[] = [
  'Admissible actions: {x}.',
  'Available actions: {x}.',
  'Valid actions here: {x}.',
  'Notes: visited {x}.',
  'You already checked: {x}. Do not go back there; remember what you found.',
  'You are holding {x}.',
  'Suggested next action: {x}.',
  'Try: {x}.',
  "'{x}' is not a valid action here. Only choose from the admissible actions, with the exact object numbers.",
  'Nothing happens means the action was not valid. Actions that did not work so far: {x}. Try a different action.',
];

/** What a hint may draw on at one decision. */
export interface HintInputs {
  /** admissible actions at this decision (may be empty) */
  admissible: readonly string[];
  /** the action the context is labelled with */
  target: string;
  /** executed actions so far */
  actions: readonly string[];
}

/** Probabilities of each hint segment per training context. @default 0.5 in all */
export interface HintRates {
  /** skills in the system message */
  skills: number;
  /** a `Hint: …` turn before the decision */
  hint: number;
  /** a hint injected after an earlier observation */
  injected: number;
}

function fill(t: string, x: string): string {
  return t.replace('{x}', x);
}

function visited(actions: readonly string[]): string[] {
  const out: string[] = [];
  for (const a of actions) if (a.startsWith('go to ') && !out.includes(a.slice(6))) out.push(a.slice(6));
  return out.slice(-8);
}

function holding(actions: readonly string[]): string | null {
  let held: string | null = null;
  for (const a of actions) {
    const t = /^take (.+?) from /.exec(a);
    if (t) held = t[1]!;
    if (/^(put|move) /.test(a)) held = null;
  }
  return held;
}

/** One `Hint:` text for a decision: an admissible list holding the target, a note, a suggestion or a warning. */
export function sampleHintText(rng: Rng, inp: HintInputs): string {
  const kind = rng.int(5);
  if (kind === 0 && inp.admissible.length > 0) {
    // a short list that contains the labelled action, as a harness listing admissible actions would
    const others = rng.shuffle(inp.admissible.filter((a) => a !== inp.target)).slice(0, 3 + rng.int(5));
    const list = rng.shuffle(inp.admissible.includes(inp.target) ? [inp.target, ...others] : others);
    return fill(rng.pick(TEMPLATE_BANK.slice(0, 3)), list.join(', '));
  }
  if (kind === 1) {
    const v = visited(inp.actions);
    const h = holding(inp.actions);
    if (h && rng.chance(0.5)) return fill(TEMPLATE_BANK[5]!, h);
    if (v.length > 0) return fill(rng.pick(TEMPLATE_BANK.slice(3, 5)), v.join(', '));
  }
  if (kind === 2) {
    // suggestions are mostly right, so following a harness's suggestion is learned, blindly following a wrong one is not
    const s = rng.chance(0.8) || inp.admissible.length === 0 ? inp.target : rng.pick(inp.admissible);
    return fill(rng.pick(TEMPLATE_BANK.slice(6, 8)), s);
  }
  return rng.pick(WARNING_BANK);
}

/**
 * A copy of `messages` with random hint segments, placed where the harness puts them.
 * Deterministic for the RNG state.
 */
export function withHints(messages: readonly ChatMessage[], rng: Rng, inp: HintInputs, rates: HintRates): ChatMessage[] {
  const out = messages.map((m) => ({ ...m }));
  if (rng.chance(rates.skills) && out[0]?.role === 'system') {
    const n = 1 + rng.int(3);
    const skills = rng.shuffle(SKILL_BANK).slice(0, n);
    out[0] = { role: 'system', content: `${out[0].content}\n\nSkills:\n${skills.map((s, i) => `${i + 1}. ${s}`).join('\n')}` };
  }
  if (rng.chance(rates.injected)) {
    // after an env observation (a user turn that follows an assistant turn)
    const spots = out.map((m, i) => (m.role === 'user' && out[i - 1]?.role === 'assistant' ? i : -1)).filter((i) => i >= 0);
    if (spots.length > 0) {
      const at = rng.pick(spots);
      const text = rng.chance(0.5) ? rng.pick(WARNING_BANK) : fill(TEMPLATE_BANK[9]!, out[at - 1]!.content);
      out.splice(at + 1, 0, { role: 'user', content: text });
    }
  }
  if (rng.chance(rates.hint)) out.push({ role: 'user', content: `Hint: ${sampleHintText(rng, inp)}` });
  return out;
}
