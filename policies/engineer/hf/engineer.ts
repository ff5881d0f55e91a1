/**
 * A trained hf: engineer as experiments use it: the run folder `hr1 train --engineer hf:DIR` wrote
 * (config.json names the checkpoint and the LoRA shape; engineer.safetensors / engineer-sft.safetensors
 * hold the trained weights). A proposal starts a torch process, loads the base and the weights,
 * decodes greedily under the patch grammar (top-p so small that only the most likely allowed id
 * survives), and closes the process: a few seconds per packet, nothing left running.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { LearnerProcess } from '../../../learner/process.ts';
import type { Patch } from '../../../harness/index.ts';
import { EngineerError } from '../errors.ts';
import type { Packet } from '../packet.ts';
import { engineerPromptTokens, packetNames, tokensToPatch } from '../patch-lang.ts';
import { hfPromptIds } from './prompt.ts';
import { sampleConstrained } from './sample.ts';
import { loadHfTokenizer } from './tokenizer.ts';

/** top-p that keeps only the most likely allowed id: greedy decoding through the sampler */
const GREEDY_TOP_P = 1e-9;

interface HfRunConfig {
  engineer: string;
  hf: { lora: { r: number; alpha: number; dropout: number; targets?: string[] } | null; full: boolean; dtype: 'auto' | 'float32' | 'bfloat16'; promptTokens: number; maxNewTokens: number; maxLen?: number };
  device: 'auto' | 'cpu' | 'cuda';
  python?: string;
}

/** The weights file of an hf: engineer run for an ONNX name (engineer.onnx → engineer.safetensors), when the run is one. */
export function hfRunFile(runDir: string, onnxFile: string): string | null {
  const f = join(runDir, onnxFile.replace(/\.onnx$/, '.safetensors'));
  return existsSync(f) && existsSync(join(runDir, 'config.json')) ? f : null;
}

function readRunConfig(runDir: string): HfRunConfig {
  let c: HfRunConfig;
  try {
    c = JSON.parse(readFileSync(join(runDir, 'config.json'), 'utf8')) as HfRunConfig;
  } catch (e) {
    throw new EngineerError('ENGINEER_BAD_OPTION', `${runDir}/config.json cannot be read (${(e as Error).message}); pass --engineer with a hr1 train run folder`, { field: 'engineer' });
  }
  if (typeof c.engineer !== 'string' || !c.engineer.startsWith('hf:')) throw new EngineerError('ENGINEER_BAD_OPTION', `${runDir} is not an hf: engineer's run (its config.json has engineer ${JSON.stringify(c.engineer)})`, { field: 'engineer' });
  return c;
}

/** The greedy patch of a trained hf: engineer for a packet. */
export async function proposeFromHfRun(runDir: string, weightsFile: string, p: Packet): Promise<Patch> {
  const c = readRunConfig(runDir);
  const dir = c.engineer.slice(3);
  if (!existsSync(join(dir, 'config.json'))) throw new EngineerError('ENGINEER_BAD_OPTION', `the engineer ${runDir} was trained from ${dir}, which is gone; the base checkpoint must stay where it was trained from`, { field: 'engineer' });
  const tok = loadHfTokenizer(dir);
  const proc = await LearnerProcess.start(c.python ? { python: c.python } : {});
  try {
    await proc.hfLoad({ dir, lora: c.hf.full ? null : c.hf.lora, full: c.hf.full, device: c.device, dtype: c.hf.dtype, seed: 0, optim: {}, ...(c.hf.maxLen ? { maxLen: c.hf.maxLen } : {}) });
    await proc.hfSetWeights({ bytes: readFileSync(weightsFile) });
    const [group] = await sampleConstrained(proc, dir, { prompts: [hfPromptIds(tok, p, c.hf.promptTokens)], grammarPrompts: [engineerPromptTokens(p)], k: 1, temperature: 1, topP: GREEDY_TOP_P, maxNewTokens: c.hf.maxNewTokens, seed: 0 });
    return tokensToPatch(group![0]!.grammar, packetNames(p));
  } finally {
    await proc.close();
  }
}
