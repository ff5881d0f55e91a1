/**
 * Function tools per env, for endpoint targets in tools mode (`targetOptions.tools: true`,
 * `hr1 eval --tools`): the tools offered to the model, and how its tool calls become the action
 * text the env's parser reads. Only envs with an AgentBench function-calling variant have them.
 *
 * @example
 * const t = envTools('dbbench')!;
 * t.tools;                               // FC_TOOLS: execute_sql, commit_final_answer
 * t.format(calls, content, ctx);         // "Action: Operation\n```sql\nSELECT 1\n```"
 */
import { FC_TOOLS } from '../../envs/dbbench/protocol.ts';
import type { DecisionContext } from '../../harness/types.ts';
import type { ToolCall, ToolSpec } from './openai.ts';

export interface EnvTools {
  /** OpenAI function tools offered with every request */
  tools: readonly ToolSpec[];
  /** the action text for the tool calls of one answer (content: the message text beside them) */
  format(calls: readonly ToolCall[], content: string, ctx?: DecisionContext): string;
}

/**
 * DBBench: a call of `execute_sql` or `commit_final_answer` becomes the v0.2 text action
 * (`Action: Operation` + a ```sql block, or `Action: Answer` + `Final Answer: [...]`); on a
 * main-fc task (whose parser takes the tool calls themselves, as JSON) the calls go as JSON.
 */
const dbbench: EnvTools = {
  tools: FC_TOOLS as unknown as readonly ToolSpec[],
  format(calls, content, ctx) {
    const c = calls[0]!;
    const args = c.args ?? {};
    let text: string;
    if (c.name === 'execute_sql') text = `Action: Operation\n\`\`\`sql\n${String(args.query ?? Object.values(args)[0] ?? '')}\n\`\`\``;
    else if (c.name === 'commit_final_answer') {
      const a = args.answers ?? Object.values(args)[0];
      text = `Action: Answer\nFinal Answer: ${JSON.stringify(Array.isArray(a) ? a.map(String) : a === undefined ? [] : [String(a)])}`;
    } else text = content;
    // a main-fc session does not parse the text protocol: hand it the calls as it expects them
    if (ctx?.session?.parse && !ctx.session.parse(text).ok) {
      const json = JSON.stringify({ content, tool_calls: calls.map((x) => ({ id: x.id, type: 'function', function: { name: x.name, arguments: x.arguments } })) });
      if (ctx.session.parse(json).ok) return json;
    }
    return text;
  },
};

const ENV_TOOLS: Record<string, EnvTools> = { dbbench };

/** The envs that have function tools (tools mode works there only). */
export const TOOL_ENVS: readonly string[] = Object.keys(ENV_TOOLS);

/** An env's function tools, or undefined when it has none. */
export function envTools(env: string): EnvTools | undefined {
  return Object.hasOwn(ENV_TOOLS, env) ? ENV_TOOLS[env] : undefined;
}
