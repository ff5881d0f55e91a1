/**
 * `hr1 serve` for local targets: a SIMULATED target behind an OpenAI-compatible endpoint. A chat
 * request carries only messages, so the server finds the task from the opening messages (the
 * initial observation for ALFWorld, the question for DBBench), replays the conversation's actions
 * on a fresh session to rebuild the state, and asks the sim for its next output.
 */
import { Hr1Error } from '../../cluster/errors.ts';
import { loadGames, reset as alfReset } from '../../envs/alfworld/index.ts';
import { loadTasks, SHIPPED_SETS } from '../../envs/dbbench/index.ts';
import type { ChatMessage, DecisionContext } from '../../harness/index.ts';
import { parseTargetSpec } from './spec.ts';
import { serveTarget, startServer, type RunningServer, type ServeErrorCode, type ServerOptions } from './serve.ts';
import { envFactory } from '../../envs/registry.ts';
import { makeModel } from './make.ts';

let alfIndex: Map<string, string> | undefined;
let dbIndex: Map<string, string> | undefined;

function findTask(env: string, messages: readonly ChatMessage[]): string {
  if (env === 'alfworld') {
    alfIndex ??= new Map(loadGames().games.map((g) => [alfReset(g, { protocol: 'react' }).observation, g.id]));
    for (const m of messages) if (m.role === 'user') {
      const id = alfIndex.get(m.content);
      if (id) return id;
    }
  } else if (env === 'dbbench') {
    if (!dbIndex) {
      dbIndex = new Map();
      for (const set of Object.keys(SHIPPED_SETS)) for (const t of loadTasks({ file: set })) dbIndex.set(`${t.description}\n${t.addDescription}`.trim(), t.id);
    }
    for (const m of messages) if (m.role === 'user') {
      const id = dbIndex.get(m.content.trim());
      if (id) return id;
    }
  }
  throw new Hr1Error<ServeErrorCode>('SERVE_UNKNOWN_TASK', `the conversation does not open like a shipped ${env} task; a served sim can only play the shipped tasks (send the env's own opening messages)`);
}

/** Serve `sim/<profile>` for one env, or what policies/targets/serve.ts serves (echo). */
export async function serveLocal(spec: string, opts: Omit<ServerOptions, 'backend'> & { env?: string } = {}): Promise<RunningServer & { target: string }> {
  const t = parseTargetSpec(spec);
  if (t.kind !== 'sim') return serveTarget(spec, opts);
  const env = opts.env;
  if (env !== 'alfworld' && env !== 'dbbench') throw new Hr1Error<ServeErrorCode>('BAD_OPTION', `serving ${spec} needs --env alfworld or --env dbbench (the sim plays one env)`);
  const model = await makeModel(spec);
  const server = await startServer({
    ...opts,
    models: [spec],
    backend: async (req) => {
      const messages = req.messages.map((m) => ({ role: m.role as ChatMessage['role'], content: String(m.content ?? '') }));
      const taskId = findTask(env, messages);
      const seed = req.seed ?? 0;
      const session = envFactory(env, taskId).open(seed);
      try {
        const start = await session.reset();
        // replay the agent's actions after the env's opening turns to rebuild the state
        const opening = start.messages.length;
        let step = 0;
        for (const m of messages.slice(opening)) {
          if (m.role !== 'assistant') continue;
          const p = session.parse(m.content);
          const fb = await session.step(p.action);
          step++;
          if (fb.done) break;
        }
        const ctx = { messages, step, env, taskId, session, seed } as DecisionContext;
        return { content: await model.decide(ctx) };
      } finally {
        await session.close();
      }
    },
  });
  return Object.assign(server, { target: spec });
}
