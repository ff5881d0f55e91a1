/** Models from target spec strings: `sim/<profile>` (SIMULATED), `openai:<url>#<model>`, `lm/<name>`. */
import { Hr1Error } from '../../cluster/errors.ts';
import type { Model } from '../../harness/index.ts';
import { parseTargetSpec, type TargetErrorCode } from './spec.ts';
import { simModel } from './sim/sim.ts';

/**
 * The model for a target spec. `options` are the backend's settings (JSON, from the CLI or a
 * config); they are part of the episode cache key (drivers/rollout.ts).
 */
export async function makeModel(spec: string, options: Record<string, unknown> = {}): Promise<Model> {
  void options;
  const t = parseTargetSpec(spec);
  if (t.kind === 'sim') return simModel(t.profile);
  if (t.kind === 'openai') {
    const { OpenAIModel } = await import('./openai.ts');
    return new OpenAIModel({ model: t.model, client: { baseUrl: t.baseUrl } });
  }
  if (t.kind === 'lm') {
    const { lmModel } = await import('./lm/index.ts');
    return lmModel(t.name);
  }
  throw new Hr1Error<TargetErrorCode>('TARGET_NOT_AVAILABLE', `target "${spec}" is not available`, { data: { spec } });
}
