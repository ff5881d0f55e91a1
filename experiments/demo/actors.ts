import { z } from 'zod';
import { defineActor } from '../../cluster/actor.ts';
import { ActorRefSchema, type Cluster } from '../../cluster/client.ts';

/** Demo: collects totals reported by the shards (a named actor: get-or-create). */
export const Ledger = defineActor({
  name: 'DemoLedger',
  protocol: {
    report: { input: z.object({ shard: z.string(), total: z.number() }), output: z.null() },
    totals: { input: z.null(), output: z.record(z.string(), z.number()) },
  },
  create: () => ({ totals: {} as Record<string, number> }),
  handlers: {
    report: (s, { shard, total }) => {
      s.totals[shard] = total;
      return null;
    },
    totals: (s) => s.totals,
  },
});

/** Demo: a shard that sums numbers and, when asked, reports to a ledger whose ref it received in a message. */
export const Shard = defineActor({
  name: 'DemoShard',
  args: z.object({ label: z.string() }),
  protocol: {
    add: { input: z.object({ x: z.number() }), output: z.number() },
    flush: { input: z.object({ ledger: ActorRefSchema }), output: z.number() },
  },
  create: ({ label }, ctx) => ({ label, sum: 0, node: ctx.nodeId, cluster: ctx.services as Cluster }),
  handlers: {
    add: (s, { x }) => (s.sum += x),
    flush: async (s, { ledger }) => {
      await s.cluster.handle(Ledger, ledger).report({ shard: s.label, total: s.sum });
      return s.sum;
    },
  },
});
