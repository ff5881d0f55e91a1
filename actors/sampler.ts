/**
 * EngineerSampler actor: the engineer in onnxruntime-node. Loads an exported model from the
 * object store (by name) or a path, and samples K completions per prompt with per-token
 * log-probs, temperature, top-p and a seeded RNG. A grammar constraint is picked by name from
 * {@link registerGrammar} (functions cannot travel in messages); `none` constrains nothing.
 */
import { z } from 'zod';
import { defineActor } from '../cluster/actor.ts';
import type { Cluster } from '../cluster/client.ts';
import { OnnxEngineer, SamplerError, unconstrained, type GrammarConstraint } from '../learner/index.ts';

const grammars = new Map<string, GrammarConstraint>([['none', unconstrained]]);

/** Make a grammar constraint available to samplers by name (register it in a module every node imports). */
export function registerGrammar(name: string, constraint: GrammarConstraint): void {
  grammars.set(name, constraint);
}

/** Names of the registered grammar constraints. */
export function registeredGrammars(): string[] {
  return [...grammars.keys()].sort();
}

function grammar(name: string): GrammarConstraint {
  const g = grammars.get(name);
  if (!g) throw new SamplerError('SAMPLER_GRAMMAR', `no grammar constraint named "${name}"; registered: ${registeredGrammars().join(', ')} — call registerGrammar() in a module the node imports`, { data: { name } });
  return g;
}

const ModelRef = z.union([z.object({ object: z.string() }).strict(), z.object({ path: z.string() }).strict()]);
export type ModelRef = z.infer<typeof ModelRef>;

const Ids = z.array(z.array(z.number().int().min(0)));
const CompletionSchema = z.object({ ids: z.array(z.number()), logprobs: z.array(z.number()), finished: z.boolean() });

interface State {
  eng: OnnxEngineer | undefined;
  source: string | null;
  eosId: number;
  maxLen: number;
  grammar: string;
  samples: number;
}

async function load(s: State, ref: ModelRef, services: unknown): Promise<{ source: string; bytes: number; loadMs: number }> {
  const t0 = performance.now();
  let bytes: Uint8Array;
  let source: string;
  if ('object' in ref) {
    const objects = (services as Cluster | undefined)?.objects;
    if (!objects) throw new SamplerError('SAMPLER_MODEL', 'this sampler has no object store: spawn it through a cluster node, or load by path');
    bytes = await objects.get(ref.object);
    source = `object:${ref.object}`;
  } else {
    const { readFile } = await import('node:fs/promises');
    bytes = await readFile(ref.path).catch((e: Error) => {
      throw new SamplerError('SAMPLER_MODEL', `cannot read the engineer ONNX model at ${ref.path}: ${e.message}`, { cause: e });
    });
    source = `path:${ref.path}`;
  }
  const eng = await OnnxEngineer.fromBytes(bytes, { eosId: s.eosId, maxLen: s.maxLen });
  const old = s.eng;
  s.eng = eng;
  s.source = source;
  await old?.release();
  return { source, bytes: bytes.byteLength, loadMs: performance.now() - t0 };
}

function need(s: State): OnnxEngineer {
  if (!s.eng) throw new SamplerError('SAMPLER_MODEL', 'no model loaded: call load({object}) with the name the learner exported, or load({path})');
  return s.eng;
}

export const EngineerSampler = defineActor({
  name: 'EngineerSampler',
  args: z.object({
    eosId: z.number().int().min(0),
    /** the model's maxLen (prompt + completion) */
    maxLen: z.number().int().min(2),
    /** a registered grammar constraint. @default 'none' */
    grammar: z.string().default('none'),
    /** load this model at start */
    model: ModelRef.optional(),
  }),
  protocol: {
    load: { input: ModelRef, output: z.object({ source: z.string(), bytes: z.number(), loadMs: z.number() }) },
    sample: {
      input: z.object({
        prompts: Ids.min(1),
        k: z.number().int().min(1).max(256).default(8),
        temperature: z.number().min(0).default(0.7),
        topP: z.number().gt(0).max(1).default(0.95),
        maxNewTokens: z.number().int().min(1).default(64),
        seed: z.number().int().default(0),
      }),
      output: z.object({ completions: z.array(z.array(CompletionSchema)), source: z.string(), ms: z.number() }),
    },
    logprobs: { input: z.object({ prompts: Ids, completions: Ids, temperature: z.number().positive().default(1) }), output: z.object({ logprobs: z.array(z.array(z.number())) }) },
    info: { input: z.null(), output: z.object({ source: z.string().nullable(), grammar: z.string(), samples: z.number(), node: z.string() }) },
  },
  create: async (args, ctx) => {
    grammar(args.grammar);
    const s: State = { eng: undefined, source: null, eosId: args.eosId, maxLen: args.maxLen, grammar: args.grammar, samples: 0 };
    if (args.model) await load(s, args.model, ctx.services);
    return s;
  },
  handlers: {
    load: (s, ref, ctx) => load(s, ref, ctx.services),
    sample: async (s, a) => {
      const t0 = performance.now();
      const completions = await need(s).sample(a.prompts, { ...a, constraint: grammar(s.grammar) });
      s.samples += a.prompts.length * a.k;
      return { completions, source: s.source!, ms: performance.now() - t0 };
    },
    logprobs: async (s, a) => ({ logprobs: await need(s).tokenLogprobs(a.prompts, a.completions, a.temperature) }),
    info: (s, _i, ctx) => ({ source: s.source, grammar: s.grammar, samples: s.samples, node: ctx.nodeId }),
  },
  destroy: async (s) => {
    await s.eng?.release();
  },
});
