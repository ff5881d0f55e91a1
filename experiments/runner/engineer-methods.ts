/**
 * The trained built-in engineers as experiment methods. `--engineer DIR` names a `hr1 train` run
 * folder (engineer-sft.onnx, engineer.onnx), or a folder with one such run per env (DIR/<env>/…).
 * They are part of the built-in methods (see `builtinMethods()` in methods.ts): nothing has to
 * register them, whichever entry point (CLI or code) looks them up.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { loadBuiltinEngineer } from '../../policies/engineer/index.ts';
import { ExpError } from './errors.ts';
import type { Method, MethodOptions } from './methods.ts';

/** Why an engineer row is empty when no engineer is given. */
export const ENGINEER_MISSING = 'not available (engineer not trained: run hr1 train, then pass --engineer RUN_DIR)';

function modelPath(o: MethodOptions, env: string, file: string): string | undefined {
  if (!o.engineer) return undefined;
  for (const p of [join(o.engineer, env, file), join(o.engineer, file)]) if (existsSync(p)) return p;
  return undefined;
}

function engineerMethod(name: string, label: string, file: string): Method {
  return {
    name,
    label,
    kind: 'engineer',
    version: 'builtin-1',
    available: (o) => (o.engineer ? true : ENGINEER_MISSING),
    async propose(ctx) {
      const path = modelPath(ctx.options, ctx.env, file);
      if (!path) {
        throw new ExpError('EXP_METHOD_FAILED', `${name}: no ${file} for ${ctx.env} under ${ctx.options.engineer} (expected ${join(ctx.options.engineer ?? '?', ctx.env, file)} or ${join(ctx.options.engineer ?? '?', file)}); pass --engineer with a hr1 train run folder`, { path: 'engineer', data: { method: name, env: ctx.env } });
      }
      // greedy: the engineer's single best patch for this packet
      const [patch] = await loadBuiltinEngineer(path).propose(ctx.packet, { temperature: 0 });
      return patch ?? null;
    },
  };
}

/** `engineer-sft` and `engineer-grpo`, the built-in engineer's two checkpoints. */
export function engineerMethods(): Method[] {
  return [engineerMethod('engineer-sft', 'engineer, SFT only', 'engineer-sft.onnx'), engineerMethod('engineer-grpo', 'engineer, SFT+GRPO (Harness-R1)', 'engineer.onnx')];
}
