/**
 * `lm/<name>`: a zoo model served by onnxruntime-node behind the harness's Model interface.
 * The context builder turns the messages into a window, the model samples the action text
 * (seeded by the episode seed, the step and the context length), and the harness parses it.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { hashString } from '../../../cluster/rng.ts';
import type { DecisionContext, Model } from '../../../harness/index.ts';
import { OnnxEngineer } from '../../../learner/onnx.ts';
import { buildContext } from './context.ts';
import { fromSlots, slotMap, slotMessages, type SlotMap } from './slots.ts';
import { LmNotBuiltError } from './errors.ts';
import { LmTokenizer } from './tokenizer.ts';
import { modelDir, readMeta, resolveConfig, type LmMeta, type ResolvedConfig, type ZooConfig } from './zoo.ts';

export interface LmModelOptions {
  /** zoo folder (see zooDir) */
  dir?: string;
  /** overrides the config's sampling temperature; 0 = greedy */
  temperature?: number;
  /** @default 0.95 */
  topP?: number;
  /** the config table. @default ZOO */
  zoo?: readonly ZooConfig[];
}

/** A loaded zoo model. */
export interface LmModel extends Model {
  readonly meta: LmMeta;
  readonly tokenizer: LmTokenizer;
  /** the prompt window the model would see for these messages */
  window(ctx: Pick<DecisionContext, 'messages'>): number[];
  release(): Promise<void>;
}

/**
 * Load `lm/<name>` (name or `name@tiny`) from the zoo cache. Throws {@link LmNotBuiltError}
 * (`LM_NOT_BUILT`, naming `hr1 zoo build --only NAME`) when it is not built, LM_UNKNOWN when the
 * name is not in the zoo.
 *
 * @example
 * const m = await lmModel('alf-s-256-a');
 * await runEpisode(alfworldEnv(game), { model: m, seed: 1 });
 */
export async function lmModel(name: string, o: LmModelOptions = {}): Promise<LmModel> {
  const c: ResolvedConfig = resolveConfig(name, o.zoo);
  const dir = modelDir(c, o.dir);
  const meta = readMeta(c, o.dir);
  if (!meta || !existsSync(join(dir, 'model.onnx'))) throw new LmNotBuiltError(name, dir);
  const tok = new LmTokenizer(meta.words);
  const eng = await OnnxEngineer.fromPath(join(dir, 'model.onnx'), { eosId: meta.eosId, maxLen: meta.maxLen });
  const temperature = o.temperature ?? meta.config.temperature;
  const budget = { maxLen: meta.maxLen, maxNewTokens: meta.maxNewTokens };
  const slots = meta.config.slots === true;
  const windowWith = (ctx: Pick<DecisionContext, 'messages'>, map: SlotMap | null): number[] => buildContext(map ? slotMessages(ctx.messages, map) : ctx.messages, tok, budget);
  const window = (ctx: Pick<DecisionContext, 'messages'>): number[] => windowWith(ctx, slots ? slotMap(ctx.messages) : null);
  return {
    name: `lm/${name}`,
    meta,
    tokenizer: tok,
    window,
    async decide(ctx) {
      const map = slots ? slotMap(ctx.messages) : null;
      const prompt = windowWith(ctx, map);
      const seed = hashString(`${ctx.seed}:${ctx.step}:${ctx.messages.length}`);
      const out = await eng.sample([prompt], { k: 1, temperature, topP: o.topP ?? 0.95, maxNewTokens: meta.maxNewTokens, seed });
      const text = tok.decode((out[0]?.[0]?.ids ?? []).filter((i) => i !== meta.eosId));
      // a product slot the model wrote is the id it stands for in this context
      return map ? fromSlots(text, map) : text;
    },
    release: () => eng.release(),
  };
}
