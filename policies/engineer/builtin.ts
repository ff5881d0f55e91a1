/**
 * The built-in engineer at inference: an exported ONNX model read by onnxruntime-node, sampling
 * patch tokens under the patch grammar from a packet's prompt tokens.
 */
import { readFileSync } from 'node:fs';
import { OnnxEngineer } from '../../learner/onnx.ts';
import type { Patch } from '../../harness/index.ts';
import { EngineerError } from './errors.ts';
import type { Packet } from './packet.ts';
import { EOS_ID, MAX_COMPLETION_TOKENS, allowedNext, engineerPromptTokens, packetNames, tokensToPatch } from './patch-lang.ts';

export interface BuiltinEngineer {
  readonly name: string;
  /** K patches for a packet; temperature 0 gives the greedy one (k is then 1). */
  propose(p: Packet, o?: { k?: number; temperature?: number; topP?: number; seed?: number }): Promise<Patch[]>;
}

const cache = new Map<string, Promise<OnnxEngineer>>();

/** Load an engineer from an ONNX file written by `hr1 train` (engineer.onnx or engineer-sft.onnx). */
export function loadBuiltinEngineer(path: string, opts: { maxLen?: number; name?: string } = {}): BuiltinEngineer {
  let eng = cache.get(path);
  if (!eng) {
    let bytes: Uint8Array;
    try {
      bytes = readFileSync(path);
    } catch (e) {
      throw new EngineerError('ENGINEER_BAD_OPTION', `no engineer model at ${path} (${(e as Error).message}); train one with hr1 train, which writes engineer.onnx into its run folder`, { field: 'engineer' });
    }
    eng = OnnxEngineer.fromBytes(bytes, { eosId: EOS_ID, maxLen: opts.maxLen ?? 768 });
    cache.set(path, eng);
  }
  const ready = eng;
  return {
    name: opts.name ?? `builtin:${path}`,
    async propose(p, o = {}) {
      const e = await ready;
      const temperature = o.temperature ?? 0;
      const prompt = engineerPromptTokens(p);
      const names = packetNames(p);
      const [group] = await e.sample([prompt], { k: temperature === 0 ? 1 : (o.k ?? 8), temperature, topP: o.topP ?? 0.95, maxNewTokens: MAX_COMPLETION_TOKENS, seed: o.seed ?? 0, constraint: (prefix) => allowedNext(prefix, prompt) });
      return group!.map((c) => tokensToPatch(c.ids, names));
    },
  };
}
