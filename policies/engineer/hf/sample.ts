/**
 * Sampling an hf: engineer under the patch grammar: the torch process (learner/hf.py) decodes with
 * a KV cache, this side holds the grammar and sends each row's allowed ids per step.
 */
import type { LearnerProcess } from '../../../learner/process.ts';
import { ConstrainedRow, hfSpelling } from './spelling.ts';

/** One sample: the tokenizer ids as sampled (to the learner as they are), their unmasked log-probs, and the grammar tokens they spell. */
export interface HfCompletion {
  ids: number[];
  logprobs: number[];
  grammar: number[];
  finished: boolean;
}

/**
 * Sample K completions per prompt under the patch grammar. `prompts` are tokenizer ids (the chat
 * template applied); `grammarPrompts` the built-in prompt tokens of the same packets (they tell the
 * grammar how many packet names `<ref:i>` exist).
 */
export async function sampleConstrained(
  proc: LearnerProcess,
  dir: string,
  a: { prompts: number[][]; grammarPrompts: number[][]; k: number; temperature: number; topP: number; maxNewTokens: number; seed: number },
): Promise<HfCompletion[][]> {
  const spelling = hfSpelling(dir);
  const { session, rows: n } = await proc.hfDecodeStart({ prompts: a.prompts, k: a.k, seed: a.seed, temperature: a.temperature, topP: a.topP });
  const rows = Array.from({ length: n }, (_, r) => new ConstrainedRow(spelling, a.grammarPrompts[Math.floor(r / a.k)]!, a.maxNewTokens));
  const ids: number[][] = rows.map(() => []);
  const lps: number[][] = rows.map(() => []);
  try {
    for (;;) {
      const active = rows.flatMap((row, r) => (row.done ? [] : [r]));
      if (active.length === 0) break;
      const step = await proc.hfDecodeStep({ session, rows: active, allowed: active.map((r) => rows[r]!.allowed()) });
      active.forEach((r, i) => {
        const tok = step.tokens[i]!;
        rows[r]!.push(tok);
        ids[r]!.push(tok);
        lps[r]!.push(step.logprobs[i]!);
      });
    }
  } finally {
    await proc.hfDecodeEnd({ session }).catch(() => {});
  }
  const out: HfCompletion[][] = a.prompts.map(() => []);
  rows.forEach((row, r) => out[Math.floor(r / a.k)]!.push({ ids: ids[r]!, logprobs: lps[r]!, grammar: [...row.grammar], finished: row.done }));
  return out;
}

