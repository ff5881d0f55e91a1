import type { Corruptor } from './sim.ts';

function sqlOf(action: string): string | null {
  return /```sql\n([\s\S]*?)\n```/.exec(action)?.[1] ?? null;
}

function operation(sql: string): string {
  return `I will run a query.\nAction: Operation\n\`\`\`sql\n${sql}\n\`\`\``;
}

/** How a SIMULATED DBBench agent fails, per mode (null: not applicable now). */
export const dbbenchCorruptor: Corruptor = (mode, v) => {
  const a = v.oracle;
  const sql = sqlOf(a);
  const last = v.outputs[v.outputs.length - 1];
  const lastObs = v.feedback[v.feedback.length - 1] ?? '';
  switch (mode) {
    case 'invalid_action': {
      // a hallucinated table name
      if (!sql) return null;
      const t = /\b(FROM|INTO|UPDATE)\s+(`?)([^`\s(]+)\2/i.exec(sql);
      return t ? operation(sql.replace(t[0], `${t[1]} \`${t[3]}_table\``)) : null;
    }
    case 'format_violation':
      // the SQL without the protocol's "Action:" line
      return sql ? `The answer can be found with this query:\n${sql}` : 'The answer is probably in the table.';
    case 'skip_precondition': {
      // forgets to quote a string literal
      if (!sql || !/'[^']*'/.test(sql)) return null;
      return operation(sql.replace(/'([^']*)'/, '$1'));
    }
    case 'premature_finish':
      // answers before running the query
      return sql ? 'I think I know this.\nAction: Answer\nFinal Answer: ["0"]' : null;
    case 'ignore_feedback':
      return last !== undefined && /^\d{4} \([0-9A-Z]{5}\)/.test(lastObs) ? last : null;
    case 'state_loss':
      // runs the same query again instead of using its result
      return last !== undefined && sqlOf(last) !== null && !/^\d{4} \(/.test(lastObs) ? last : null;
    case 'loop':
      return last ?? null;
  }
};
