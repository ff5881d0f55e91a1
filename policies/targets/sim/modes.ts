/**
 * The failure modes of SIMULATED targets, and the hint phrasings that address each. A hint
 * "addresses" a mode when its text matches one of the mode's patterns; patterns are phrased as
 * advice, so env observations ("Nothing happens.") do not match them by accident.
 */
export const MODES = [
  'invalid_action',
  'format_violation',
  'loop',
  'state_loss',
  'skip_precondition',
  'premature_finish',
  'ignore_feedback',
] as const;
export type Mode = (typeof MODES)[number];

export const MODE_DOC: Record<Mode, string> = {
  invalid_action: 'a hallucinated or invalid action (wrong instance number, unknown table)',
  format_violation: 'output that breaks the protocol (no parsable action)',
  loop: 'repeats its last action; once looping it tends to stay in the loop',
  state_loss: 'forgets where it looked or what it found, and goes back',
  skip_precondition: 'skips a needed step (open, heat/cool/clean, SQL quoting, choosing options)',
  premature_finish: 'answers or buys before it has what it needs',
  ignore_feedback: 'repeats an action that just failed, ignoring the error',
};

export const HINT_PATTERNS: Record<Mode, RegExp[]> = {
  invalid_action: [/\badmissible\b/i, /\bvalid (action|command)s?\b/i, /\bavailable actions\b/i, /\bonly (use|choose|pick)\b/i, /\bexact (name|object|number)s?\b/i, /\bcheck (the )?(column|table) names?\b/i, /\bdoes not exist\b/i],
  format_violation: [/\bformat\b/i, /\brespond with (exactly )?one\b/i, /\bAction:/, /\bone action\b/i, /\bkeep (it|your answer) short\b/i],
  loop: [/\brepeat(ed|ing)?\b/i, /\bsame action\b/i, /\bloop\b/i, /\btry (something|a) different\b/i, /\bstuck\b/i],
  state_loss: [/\balready (checked|visited|looked|searched|found)\b/i, /\byou are (carrying|holding)\b/i, /\bremember\b/i, /\bkeep track\b/i, /\bnot (go|return) back\b/i, /\bnotebook\b/i],
  skip_precondition: [/\b(open|heat|cool|clean)\b.*\b(before|first)\b/i, /\b(before|first)\b.*\b(open|heat|cool|clean)\b/i, /\bquot(e|es|ing)\b/i, /\bprecondition\b/i, /\bselect (the )?options?\b/i, /\bchoose (the )?(size|color|option)s?\b/i],
  premature_finish: [/\bverify\b/i, /\bbefore (answering|buying|you answer|you buy|committing|purchasing)\b/i, /\bdo not (answer|buy) (yet|until)\b/i, /\bquery (first|before)\b/i, /\bcheck .* before\b/i],
  ignore_feedback: [/\b(if|when|after) .*(nothing happens|error|fails?|failed)\b/i, /\bread the (error|feedback|message)\b/i, /\bdid not work\b/i, /\bfix the (query|sql|error)\b/i],
};

/** Which modes a text addresses. */
export function modesAddressed(text: string): Set<Mode> {
  const out = new Set<Mode>();
  for (const m of MODES) if (HINT_PATTERNS[m].some((re) => re.test(text))) out.add(m);
  return out;
}
