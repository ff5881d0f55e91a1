/**
 * HfSampler actor: an engineer in the Hugging Face layout (learner/hf.py), sampled in its own torch
 * process under the patch grammar. The Node side holds the grammar: per decoding step it sends each
 * row's allowed tokenizer ids (policies/engineer/hf/spelling.ts ConstrainedRow), the torch process
 * samples from the masked distribution with a seeded generator and returns the ids with their
 * log-probs under the unmasked softmax (what the learner recomputes). So every sample is a valid
 * patch, and the exact sampled ids go to the learner, never re-tokenised.
 *
 * Weights reach the sampler through the object store: the Learner publishes the safetensors of its
 * trainable weights (the LoRA adapter, or all weights) after each update; `load({object})` sets them.
 */
import { z } from 'zod';
import { defineActor, type ActorContext } from '../cluster/actor.ts';
import type { Cluster } from '../cluster/client.ts';
import { LearnerProcess, SamplerError } from '../learner/index.ts';
import { sampleConstrained } from '../policies/engineer/hf/index.ts';

const Ids = z.array(z.array(z.number().int().min(0)));
const CompletionSchema = z.object({ ids: z.array(z.number()), logprobs: z.array(z.number()), grammar: z.array(z.number()), finished: z.boolean() });

const ArgsSchema = z.object({
  /** the checkpoint folder (config.json, *.safetensors, tokenizer.json): the same path on every node that runs a sampler */
  dir: z.string().min(1),
  /** the adapter shape of the weights it will load (the learner's); null with `full` */
  lora: z.object({ r: z.number().int().min(1).default(16), alpha: z.number().positive().default(32), dropout: z.number().min(0).max(1).default(0), targets: z.array(z.string()).min(1).optional() }).strict().nullable().default({ r: 16, alpha: 32, dropout: 0 }),
  full: z.boolean().default(false),
  device: z.enum(['auto', 'cpu', 'cuda']).default('auto'),
  dtype: z.enum(['auto', 'float32', 'bfloat16']).default('auto'),
  maxLen: z.number().int().min(2).optional(),
  python: z.string().optional(),
  /** load these weights (an object the learner published) at start */
  object: z.string().optional(),
});
export type HfSamplerArgs = z.input<typeof ArgsSchema>;

interface State {
  args: z.output<typeof ArgsSchema>;
  proc: LearnerProcess;
  source: string | null;
  samples: number;
}

async function loadObject(s: State, name: string, ctx: ActorContext): Promise<{ source: string; bytes: number; loadMs: number }> {
  const t0 = performance.now();
  const objects = (ctx.services as Cluster | undefined)?.objects;
  if (!objects) throw new SamplerError('SAMPLER_MODEL', 'this sampler has no object store: spawn it through a cluster node');
  const bytes = await objects.get(name);
  await s.proc.hfSetWeights({ bytes });
  s.source = `object:${name}`;
  return { source: s.source, bytes: bytes.byteLength, loadMs: performance.now() - t0 };
}

export const HfSampler = defineActor({
  name: 'HfSampler',
  args: ArgsSchema,
  protocol: {
    load: { input: z.object({ object: z.string() }).strict(), output: z.object({ source: z.string(), bytes: z.number(), loadMs: z.number() }) },
    sample: {
      input: z.object({
        prompts: Ids.min(1),
        grammarPrompts: Ids.min(1),
        k: z.number().int().min(1).max(256).default(8),
        temperature: z.number().positive().default(1),
        topP: z.number().gt(0).max(1).default(1),
        maxNewTokens: z.number().int().min(2).default(1280),
        seed: z.number().int().default(0),
      }),
      output: z.object({ completions: z.array(z.array(CompletionSchema)), source: z.string().nullable(), ms: z.number() }),
    },
    info: { input: z.null(), output: z.object({ source: z.string().nullable(), samples: z.number(), node: z.string(), dir: z.string() }) },
  },
  create: async (args, ctx) => {
    const proc = await LearnerProcess.start({
      ...(args.python ? { python: args.python } : {}),
      onStderr: (l: string) => ctx.log.info(`[hf sampler] ${l}`),
    });
    try {
      await proc.hfLoad({ dir: args.dir, lora: args.full ? null : args.lora, full: args.full, device: args.device, dtype: args.dtype, seed: 0, optim: {}, ...(args.maxLen ? { maxLen: args.maxLen } : {}) });
    } catch (e) {
      await proc.kill();
      throw e;
    }
    const s: State = { args, proc, source: null, samples: 0 };
    if (args.object) await loadObject(s, args.object, ctx);
    return s;
  },
  handlers: {
    load: (s, a, ctx) => loadObject(s, a.object, ctx),
    sample: async (s, a) => {
      if (a.grammarPrompts.length !== a.prompts.length) throw new SamplerError('SAMPLER_INPUT', `sample: ${a.prompts.length} prompts but ${a.grammarPrompts.length} grammarPrompts; give one per prompt`);
      const t0 = performance.now();
      const completions = await sampleConstrained(s.proc, s.args.dir, a);
      s.samples += a.prompts.length * a.k;
      return { completions, source: s.source, ms: performance.now() - t0 };
    },
    info: (s, _i, ctx) => ({ source: s.source, samples: s.samples, node: ctx.nodeId, dir: s.args.dir }),
  },
  destroy: async (s) => {
    await s.proc.close();
  },
});
