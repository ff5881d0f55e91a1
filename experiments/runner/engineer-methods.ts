/**
 * The trained built-in engineers as experiment methods. `--engineer DIR` names a `hr1 train` run
 * folder (engineer-sft.onnx, engineer.onnx), or a folder with one such run per env (DIR/<env>/…).
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { loadBuiltinEngineer } from '../../policies/engineer/index.ts';
import { registerMethod, type Method, type MethodOptions } from './methods.ts';

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
    available: (o) => (o.engineer ? true : 'not available (engineer not trained: run hr1 train, then pass --engineer RUN_DIR)'),
    async propose(ctx) {
      const path = modelPath(ctx.options, ctx.env, file);
      if (!path) throw new Error(`${name}: no ${file} for ${ctx.env} under ${ctx.options.engineer} (expected ${join(ctx.options.engineer ?? '?', ctx.env, file)} or ${join(ctx.options.engineer ?? '?', file)})`);
      // greedy: the engineer's single best patch for this packet
      const [patch] = await loadBuiltinEngineer(path).propose(ctx.packet, { temperature: 0 });
      return patch ?? null;
    },
  };
}

/** Register `engineer-sft` and `engineer-grpo` (replacing the placeholders). */
export function registerEngineerMethods(): void {
  registerMethod(engineerMethod('engineer-sft', 'engineer, SFT only', 'engineer-sft.onnx'));
  registerMethod(engineerMethod('engineer-grpo', 'engineer, SFT+GRPO (Harness-R1)', 'engineer.onnx'));
}
