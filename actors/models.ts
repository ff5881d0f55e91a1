/** Models from target spec strings: `sim/<profile>` (SIMULATED), `openai:<url>#<model>`, `lm/<name>`. */
import { Hr1Error } from '../cluster/errors.ts';
import type { Model } from '../policies/harness/index.ts';
import { parseTargetSpec } from '../policies/targets/spec.ts';
import { simModel } from '../policies/targets/sim/sim.ts';

export async function makeModel(spec: string): Promise<Model> {
  const t = parseTargetSpec(spec);
  if (t.kind === 'sim') return simModel(t.profile);
  if (t.kind === 'openai') {
    const { OpenAIModel } = await import('../policies/targets/openai.ts');
    return new OpenAIModel({ model: t.model, client: { baseUrl: t.baseUrl } });
  }
  throw new Hr1Error('TARGET_NOT_AVAILABLE', `target "${spec}": learned lm/ targets are not built yet (they come with the learned-targets issue); use sim/<profile> or openai:<url>#<model>`);
}
