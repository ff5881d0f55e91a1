/** `hr1 packet show`: roll a target out on one batch and print its failure packet. */
import { withCluster, type ClusterCliOptions } from './runtime.ts';
import { checkTarget } from './targets.ts';

export interface PacketShowOptions extends Partial<ClusterCliOptions> {
  env: string;
  target: string;
  split?: string | undefined;
  tasks: number;
  seed: number;
  /** print the built-in engineer's prompt tokens instead of the text */
  tokens?: boolean | undefined;
  /** print the packet as JSON (what `parsePacket` reads) */
  json?: boolean | undefined;
}

/** In-process without --address (as before the cluster options existed). */
export async function packetShow(o: PacketShowOptions): Promise<void> {
  checkTarget(o.target);
  const { rollout, makeBatches } = await import('../../drivers/index.ts');
  const eng = await import('../../policies/engineer/index.ts');
  const [batch] = makeBatches(o.env, { count: 1, size: o.tasks, ...(o.split ? { split: o.split } : {}), seed: o.seed });
  await withCluster(
    o,
    async (rt) => {
      const r = await rollout(rt.cluster, { env: o.env, target: o.target, episodes: batch! }, { cache: null });
      const p = eng.extractPacket(r.records);
      if (o.tokens) console.log(JSON.stringify(eng.engineerPromptTokens(p)));
      else if (o.json) console.log(JSON.stringify(p));
      else console.log(eng.formatPacket(p));
      process.stderr.write(`packet ${eng.packetHash(p).slice(0, 16)}… of ${o.target}${o.target.startsWith('sim/') ? ' (SIMULATED)' : ''} on ${batch!.length} ${o.env} tasks\n`);
    },
    { defaultInProcess: true },
  );
}
