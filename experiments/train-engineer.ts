/**
 * The engineer `hr1 train` trains: the built-in one (a small transformer over the patch language's
 * own vocabulary, sampled in onnxruntime-node) or an `hf:DIR` one (a decoder-only checkpoint in the
 * Hugging Face layout, trained with LoRA by default in learner/hf.py and sampled in torch). Both
 * read the same packets and write the same patch language under the same grammar; only the way a
 * packet and a patch become token ids, and the sampler, differ. The SFT, GRPO and reward code of
 * experiments/train.ts is the same for both.
 */
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Cluster } from '../cluster/client.ts';
import { ConfigError } from '../cluster/errors.ts';
import { EngineerSampler } from '../actors/sampler.ts';
import '../actors/grammars.ts';
import { HfSampler } from '../actors/hf-sampler.ts';
import type { LearnerArgs } from '../actors/learner.ts';
import type { Packet } from '../policies/engineer/packet.ts';
import { BOS_ID, ENGINEER_VOCAB_SIZE, EOS_ID, MAX_COMPLETION_TOKENS, PAD_ID, engineerPromptTokens, packetNames, patchToTokens } from '../policies/engineer/patch-lang.ts';
import { hfPromptIds, hfSpelling, loadHfTokenizer } from '../policies/engineer/hf/index.ts';

/** What a config says about the engineer (experiments/train.ts TrainConfig's fields). */
export interface EngineerChoice {
  engineer: string;
  model: { dModel: number; nLayers: number; nHeads: number; maxLen: number };
  hf: { lora: { r: number; alpha: number; dropout: number; targets?: string[] | undefined } | null; full: boolean; dtype: 'auto' | 'float32' | 'bfloat16'; promptTokens: number; maxNewTokens: number; maxLen?: number | undefined };
  device: 'auto' | 'cpu' | 'cuda';
  python?: string | undefined;
}

/** One packet as the engineer reads it. */
export interface EngineerInput {
  /** the ids the model reads */
  ids: number[];
  /** the built-in prompt tokens: what the grammar reads (how many packet names there are) */
  grammarPrompt: number[];
  names: string[];
}

/** A sampled completion: the ids the model wrote (to the learner as they are) and the grammar tokens they spell. */
export interface SampledCompletion {
  ids: number[];
  logprobs: number[];
  grammar: number[];
}

export interface EngineerSamplerHandle {
  /** load the weights the learner published under this object name */
  load(object: string): Promise<void>;
  sample(input: EngineerInput, o: { k: number; temperature: number; topP: number; seed: number }): Promise<SampledCompletion[]>;
  kill(): Promise<void>;
}

export interface EngineerBackend {
  readonly kind: 'builtin' | 'hf';
  /** `builtin`, or `hf:<absolute dir>` */
  readonly spec: string;
  input(p: Packet): EngineerInput;
  /** a patch as completion ids (SFT); null when the patch is outside the patch language */
  completion(patch: unknown, input: EngineerInput): number[] | null;
  /** the Learner actor's args (seed, checkpoint dir and object prefix are the caller's) */
  learnerArgs(optimLr: number): Omit<LearnerArgs, 'seed' | 'checkpointDir' | 'objectPrefix'>;
  spawnSampler(cluster: Cluster): Promise<EngineerSamplerHandle>;
}

/** `hf:DIR` → the absolute dir; anything else but `builtin` is a ConfigError naming the option. */
export function parseEngineerSpec(spec: string): { kind: 'builtin' } | { kind: 'hf'; dir: string } {
  if (spec === 'builtin') return { kind: 'builtin' };
  if (spec.startsWith('hf:') && spec.length > 3) {
    const dir = resolve(spec.slice(3));
    if (!existsSync(`${dir}/config.json`)) throw new ConfigError('engineer', `${spec}: no config.json in ${dir}; write a small checkpoint with hr1 engineer init --arch qwen2 --size tiny --out ${spec.slice(3)}, or point at a Hugging Face checkpoint folder (config.json, *.safetensors, tokenizer.json)`);
    if (!existsSync(`${dir}/tokenizer.json`)) throw new ConfigError('engineer', `${spec}: no tokenizer.json in ${dir}; a Hugging Face checkpoint folder needs its tokenizer.json and tokenizer_config.json`);
    return { kind: 'hf', dir };
  }
  throw new ConfigError('engineer', `unknown engineer "${spec}": use builtin (the project's own small engineer) or hf:DIR (a Hugging Face-layout checkpoint folder, e.g. from hr1 engineer init)`);
}

export function engineerBackend(c: EngineerChoice): EngineerBackend {
  const parsed = parseEngineerSpec(c.engineer);
  if (parsed.kind === 'builtin') {
    return {
      kind: 'builtin',
      spec: 'builtin',
      input: (p) => {
        const ids = engineerPromptTokens(p);
        return { ids, grammarPrompt: ids, names: packetNames(p) };
      },
      completion: (patch, inp) => patchToTokens(patch, inp.names),
      learnerArgs: (lr) => ({
        exportOnUpdate: false,
        model: { vocabSize: ENGINEER_VOCAB_SIZE, dModel: c.model.dModel, nLayers: c.model.nLayers, nHeads: c.model.nHeads, maxLen: c.model.maxLen, padId: PAD_ID, bosId: BOS_ID, eosId: EOS_ID },
        optim: { lr },
        device: c.device,
        ...(c.python ? { python: c.python } : {}),
      }),
      spawnSampler: async (cluster) => {
        const s = await cluster.spawn(EngineerSampler, { eosId: EOS_ID, maxLen: c.model.maxLen, grammar: 'patch' });
        return {
          load: async (object) => void (await s.load({ object })),
          sample: async (inp, o) => {
            const r = await s.sample({ prompts: [inp.ids], k: o.k, temperature: o.temperature, topP: o.topP, maxNewTokens: MAX_COMPLETION_TOKENS, seed: o.seed });
            return r.completions[0]!.map((x) => ({ ids: x.ids, logprobs: x.logprobs, grammar: x.ids }));
          },
          kill: () => cluster.kill(s).catch(() => {}),
        };
      },
    };
  }
  const dir = parsed.dir;
  const tok = loadHfTokenizer(dir);
  const spelling = hfSpelling(dir);
  const hfArgs = { dir, lora: c.hf.full ? null : c.hf.lora, full: c.hf.full, dtype: c.hf.dtype, ...(c.hf.maxLen ? { maxLen: c.hf.maxLen } : {}) };
  return {
    kind: 'hf',
    spec: `hf:${dir}`,
    input: (p) => ({ ids: hfPromptIds(tok, p, c.hf.promptTokens), grammarPrompt: engineerPromptTokens(p), names: packetNames(p) }),
    completion: (patch, inp) => {
      const g = patchToTokens(patch, inp.names);
      return g === null ? null : spelling.toIds(g);
    },
    learnerArgs: (lr) => ({ exportOnUpdate: false, hf: hfArgs, optim: { lr }, device: c.device, ...(c.python ? { python: c.python } : {}) }),
    spawnSampler: async (cluster) => {
      // on CUDA the sampler and the learner share a GPU node: half a GPU each
      const s = await cluster.spawn(HfSampler.options(c.device === 'cuda' ? { resources: { gpu: 0.5 } } : {}), { ...hfArgs, device: c.device, ...(c.python ? { python: c.python } : {}) });
      return {
        load: async (object) => void (await s.load({ object })),
        sample: async (inp, o) => {
          const r = await s.sample({ prompts: [inp.ids], grammarPrompts: [inp.grammarPrompt], k: o.k, temperature: o.temperature, topP: o.topP, maxNewTokens: c.hf.maxNewTokens, seed: o.seed });
          return r.completions[0]!.map((x) => ({ ids: x.ids, logprobs: x.logprobs, grammar: x.grammar }));
        },
        kill: () => cluster.kill(s).catch(() => {}),
      };
    },
  };
}
