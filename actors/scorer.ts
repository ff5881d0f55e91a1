/**
 * Scorer actor: the validation model (P(Δ ≥ 0)) and the reward model (Δ̂) in
 * onnxruntime-node, loaded from the object store (by name) or from paths. `rank` scores and
 * orders the candidate patches of one packet; `predict` scores raw feature rows.
 */
import { z } from 'zod';
import { defineActor } from '../cluster/actor.ts';
import type { Cluster } from '../cluster/client.ts';
import { parsePacket, type Packet } from '../policies/engineer/index.ts';
import { DEFAULT_RANK_BY, ValidatorModelMissingError, ValidatorError, ValueModel, rankCandidates, scoreFeatures, type ValidatorModels } from '../policies/scorer/index.ts';

const ModelRef = z.union([z.object({ object: z.string() }).strict(), z.object({ path: z.string() }).strict()]);
export type ValidatorModelRef = z.infer<typeof ModelRef>;
const ModelsRef = z.object({ validation: ModelRef, reward: ModelRef });
export type ValidatorModelsRef = z.infer<typeof ModelsRef>;

const ScoreSchema = z.object({ nonRegressive: z.number(), delta: z.number() });

interface State {
  models: ValidatorModels | undefined;
  sources: { validation: string; reward: string } | null;
  ranked: number;
}

async function loadOne(ref: ValidatorModelRef, services: unknown): Promise<ValueModel> {
  if ('path' in ref) return ValueModel.fromPath(ref.path);
  const objects = (services as Cluster | undefined)?.objects;
  if (!objects) throw new ValidatorError('VALIDATOR_MODEL_MISSING', 'this validator has no object store: spawn it through a cluster node, or load by path');
  let bytes: Uint8Array;
  try {
    bytes = await objects.get(ref.object);
  } catch (e) {
    throw new ValidatorModelMissingError(`object:${ref.object}`, e);
  }
  return ValueModel.fromBytes(bytes, `object:${ref.object}`);
}

async function load(s: State, ref: ValidatorModelsRef, services: unknown): Promise<{ validation: string; reward: string }> {
  const validation = await loadOne(ref.validation, services);
  const reward = await loadOne(ref.reward, services).catch(async (e: unknown) => {
    await validation.release();
    throw e;
  });
  const old = s.models;
  s.models = { validation, reward };
  s.sources = { validation: validation.source, reward: reward.source };
  await old?.validation.release();
  await old?.reward.release();
  return s.sources;
}

function need(s: State): ValidatorModels {
  if (!s.models) throw new ValidatorModelMissingError('(none loaded)');
  return s.models;
}

export const Scorer = defineActor({
  name: 'Scorer',
  args: z.object({ models: ModelsRef.optional() }).optional(),
  protocol: {
    load: { input: ModelsRef, output: z.object({ validation: z.string(), reward: z.string() }) },
    rank: {
      input: z.object({
        /** the packet (JSON, as extractPacket gives it) */
        packet: z.unknown(),
        /** candidate patches (any JSON the patch schema accepts) */
        candidates: z.array(z.unknown()).min(1),
        by: z.enum(['reward', 'validation']).default(DEFAULT_RANK_BY),
      }),
      output: z.object({ scores: z.array(ScoreSchema), order: z.array(z.number().int()) }),
    },
    predict: { input: z.object({ features: z.array(z.array(z.number())) }), output: z.object({ scores: z.array(ScoreSchema) }) },
    info: { input: z.null(), output: z.object({ sources: z.object({ validation: z.string(), reward: z.string() }).nullable(), ranked: z.number(), node: z.string() }) },
  },
  create: async (args, ctx) => {
    const s: State = { models: undefined, sources: null, ranked: 0 };
    if (args?.models) await load(s, args.models, ctx.services);
    return s;
  },
  handlers: {
    load: (s, ref, ctx) => load(s, ref, ctx.services),
    rank: async (s, a) => {
      const packet: Packet = parsePacket(a.packet);
      const r = await rankCandidates(need(s), packet, a.candidates, a.by);
      s.ranked += a.candidates.length;
      return r;
    },
    predict: async (s, a) => ({ scores: await scoreFeatures(need(s), a.features) }),
    info: (s, _i, ctx) => ({ sources: s.sources, ranked: s.ranked, node: ctx.nodeId }),
  },
  destroy: async (s) => {
    await s.models?.validation.release();
    await s.models?.reward.release();
  },
});
