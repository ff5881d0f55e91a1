/** A toy copy task for the learner tests: prompt BOS x1..xn, completion x1..xn EOS. */
import { Rng } from '../../../cluster/rng.ts';
import type { EngineerModelConfig } from '../../../learner/index.ts';

export const BOS = 1;
export const EOS = 2;
export const CONFIG: EngineerModelConfig = { vocabSize: 16, dModel: 64, nLayers: 2, nHeads: 4, dFf: 128, maxLen: 32, padId: 0, bosId: BOS, eosId: EOS };

export function copyBatch(n: number, len: number, seed: number): { prompts: number[][]; completions: number[][] } {
  const rng = new Rng(seed);
  const prompts: number[][] = [];
  const completions: number[][] = [];
  for (let i = 0; i < n; i++) {
    const xs = Array.from({ length: len }, () => 3 + rng.int(13));
    prompts.push([BOS, ...xs]);
    completions.push([...xs, EOS]);
  }
  return { prompts, completions };
}

export const sum = (xs: readonly number[]): number => xs.reduce((a, b) => a + b, 0);
