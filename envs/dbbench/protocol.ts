/**
 * AgentBench DBBench protocol: prompts, action parsing, answer comparison and metrics, for the
 * v0.2 text protocol and the later function-calling variant (main-fc).
 */
import { createHash } from 'node:crypto';
import {
  pyFloat,
  pyHashKey,
  pyListOf,
  pyLiteralEval,
  pyStr,
  pyStrRepr,
  type PyLit,
} from './python.ts';
import { isWriteType, TASK_TYPES, type DbbenchTask, type TaskType } from './tasks.ts';

/** AgentBench v0.2's instruction prompt (the first user turn), verbatim */
export const V02_PROMPT = `
I will ask you a question, then you should help me operate a MySQL database with SQL to answer the question.
You have to explain the problem and your solution to me and write down your thoughts.
After thinking and explaining thoroughly, every round you can choose to operate or to answer.
your operation should be like this:
Action: Operation
\`\`\`sql
SELECT * FROM table WHERE condition;
\`\`\`
You MUST put SQL in markdown format without any other comments. Your SQL should be in one line.
Every time you can only execute one SQL statement. I will only execute the statement in the first SQL code block. Every time you write a SQL, I will execute it for you and give you the output.
If you are done operating, and you want to commit your final answer, then write down:
Action: Answer
Final Answer: ["ANSWER1", "ANSWER2", ...]
DO NOT write this pattern unless you are sure about your answer. I expect an accurate and correct answer.
Your answer should be accurate. Your answer must be exactly the same as the correct answer.
If the question is about modifying the database, then after done operation, your answer field can be anything.
If your response cannot match any pattern I mentioned earlier, you will be judged as FAIL immediately.
Your input will be raw MySQL response, you have to deal with it by yourself.
`;

/** AgentBench main's system prompt for the function-calling variant, verbatim */
export const FC_SYSTEM_PROMPT = `I will ask you a question, then you should help me operate a MySQL database with SQL to answer the question.
You have to explain the problem and your solution to me and write down your thoughts.
After thinking and explaining thoroughly, every round you can choose to operate or to answer with the two specific tools provided.
If you should execute a SQL query, use the \`execute_sql\` function, Your SQL should be in one line.
Every time you can only execute one SQL statement. I will only execute the statement in the first SQL code block. Every time you write a SQL, I will execute it for you and give you the output.
If you are done operating, and you want to commit your final answer, then use the \`commit_final_answer\` function.
DO NOT use this tool unless you are sure about your answer. I expect an accurate and correct answer.
Your answer should be accurate. Your answer must be exactly the same as the correct answer.
If the question is about modifying the database, then after done operation, your answer field can be anything.
If your response cannot match any pattern I mentioned earlier, you will be judged as FAIL immediately.
You should always use the tools provided to submit your answer. Be careful not to write it in the content field.
Your input will be raw MySQL response, you have to deal with it by yourself.`;

/** the OpenAI-style tool schemas of the function-calling variant */
export const FC_TOOLS = [
  {
    type: 'function',
    function: {
      name: 'execute_sql',
      description: 'Executes a given SQL statement on the database and returns the result.',
      parameters: {
        type: 'object',
        properties: { query: { type: 'string', description: 'The SQL query to be executed.' } },
        required: ['query'],
        additionalProperties: false,
      },
    },
  },
  {
    type: 'function',
    function: {
      name: 'commit_final_answer',
      description: 'Commits the final answer after all operations are completed.',
      parameters: {
        type: 'object',
        properties: {
          answers: { type: 'array', items: { type: 'string' }, description: 'The list of final answers to commit.' },
        },
        required: ['answers'],
        additionalProperties: false,
      },
    },
  },
] as const;

/** @default 15 (AgentBench's configs use 15 rounds for dbbench) */
export const DEFAULT_MAX_ROUNDS = 15;
/** results longer than this are cut and `[TRUNCATED]` appended */
export const TRUNCATE_AT = 800;

export interface ChatMessage {
  role: 'system' | 'user' | 'agent' | 'tool';
  content: string;
  toolCallId?: string;
}

/** the conversation an episode starts with */
export function initialMessages(task: DbbenchTask): ChatMessage[] {
  if (task.variant === 'main-fc') {
    let user = '';
    if (task.addDescription !== '') user += `Additional table information about the question: ${task.addDescription}\n`;
    user += `Question: ${task.description}\n`;
    return [
      { role: 'system', content: FC_SYSTEM_PROMPT },
      { role: 'user', content: user },
    ];
  }
  return [
    { role: 'user', content: V02_PROMPT },
    { role: 'agent', content: 'Ok.' },
    { role: 'user', content: `${task.description}\n${task.addDescription}` },
  ];
}

export function truncate(result: string): string {
  return result.length > TRUNCATE_AT ? `${result.slice(0, TRUNCATE_AT)}[TRUNCATED]` : result;
}

// ---------------------------------------------------------------- v0.2 action parsing

export type V02Action =
  | { kind: 'operation'; sql: string }
  | { kind: 'invalid-operation' } // "Action: Operation" without a ```sql block
  | { kind: 'answer'; answer: string } // text after "\nFinal Answer:"
  | { kind: 'no-answer' };

/**
 * How AgentBench v0.2 reads an agent turn: `Action: (.*?)\n` must say Operation (while rounds
 * remain) for the first ```sql block to run; otherwise the text after `\nFinal Answer:` is the answer.
 */
export function parseV02(text: string, roundsLeft: boolean): V02Action {
  const action = /Action: ([^\n]*?)\n/.exec(text);
  if (action && action[1] === 'Operation' && roundsLeft) {
    const code = /```sql\n([\s\S]*?)\n```/.exec(text);
    if (!code) return { kind: 'invalid-operation' };
    return { kind: 'operation', sql: (code[1] ?? '').trim().replace(/\n/g, ' ') };
  }
  const ans = /\nFinal Answer:([^\n]*)/.exec(text);
  return ans ? { kind: 'answer', answer: ans[1] ?? '' } : { kind: 'no-answer' };
}

// ---------------------------------------------------------------- main-fc tool calls

/** one tool call as OpenAI-style APIs return it (arguments is a JSON string) */
export interface ToolCall {
  id?: string;
  function: { name: string; arguments: string };
}

/** a function-calling agent turn */
export interface FcAction {
  content?: string;
  tool_calls?: ToolCall[];
}

export const FC_NO_TOOL_CALLS = 'Internal error: No tool calls found despite finish reason.';
export const FC_BAD_TOOL_CALL = 'Error: Failed to parse tool call. Tool call format is incorrect.';
export const FC_INVALID_FUNCTION = 'Invalid function call. Please call a tool instead.';

// ---------------------------------------------------------------- table hash

export function md5hex(s: string): string {
  return createHash('md5').update(s, 'utf8').digest('hex');
}

/** MySQL 8's default group_concat_max_len: GROUP_CONCAT output is cut at this many bytes */
export const GROUP_CONCAT_MAX_LEN = 1024;

/**
 * AgentBench's table hash, as the repr of the one-row result of
 * `select md5(group_concat(rowhash order by rowhash)) from (select substring(md5(concat_ws(',', cols)),1,5) as rowhash from t)`.
 * `rows` are the column values as strings (NULL skipped by CONCAT_WS).
 */
export function tableHashRepr(rows: readonly (readonly (string | null)[])[]): string {
  if (rows.length === 0) return '[(None,)]';
  const hashes = rows.map((r) => md5hex(r.filter((v): v is string => v !== null).join(',')).slice(0, 5)).sort();
  let joined = hashes.join(',');
  if (Buffer.byteLength(joined) > GROUP_CONCAT_MAX_LEN) joined = joined.slice(0, GROUP_CONCAT_MAX_LEN);
  return `[(${pyStrRepr(md5hex(joined))},)]`;
}

// ---------------------------------------------------------------- v0.2 comparison

function pyEq(a: PyLit, b: PyLit): boolean {
  const ka = pyHashKey(a);
  const kb = pyHashKey(b);
  if (ka !== null && kb !== null) return ka === kb;
  return JSON.stringify(a, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v)) === JSON.stringify(b, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v));
}

function litFloat(v: PyLit): number | null {
  if (v.t === 'str') return pyFloat(v.v);
  if (v.t === 'int' || v.t === 'float' || v.t === 'bool') return pyFloat(v.v);
  return null;
}

/**
 * AgentBench v0.2's read comparison: `list(eval(answer))` (else `[answer]`); one element each side →
 * floats when both parse, else exact; otherwise sets.
 */
export function compareV02Read(answer: string, label: readonly string[]): boolean {
  let ans: PyLit[];
  try {
    ans = pyListOf(pyLiteralEval(answer)) ?? [{ t: 'str', v: answer }];
  } catch {
    ans = [{ t: 'str', v: answer }];
  }
  const cor: PyLit[] = label.map((v) => ({ t: 'str', v }));
  if (ans.length === 1 && cor.length === 1) {
    const a = ans[0] as PyLit;
    const c = cor[0] as PyLit;
    const fa = litFloat(a);
    const fc = litFloat(c);
    if (fa !== null && fc !== null) return fa === fc;
    return pyEq(a, c);
  }
  const ka = ans.map(pyHashKey);
  if (ka.some((k) => k === null)) return false; // unhashable → TypeError → counted wrong
  const kc = new Set(cor.map(pyHashKey));
  const sa = new Set(ka);
  if (sa.size !== kc.size) return false;
  for (const k of sa) if (!kc.has(k)) return false;
  return true;
}

// ---------------------------------------------------------------- main-fc comparison

const SPECIAL: Record<string, string> = {
  none: '0', null: '0', undefined: '0', nan: '0', inf: '0', infinity: '0', '-inf': '0', '-infinity': '0', '': '0',
};

function stripChars(s: string, chars: string): string {
  let a = 0;
  let b = s.length;
  while (a < b && chars.includes(s[a] ?? '')) a++;
  while (b > a && chars.includes(s[b - 1] ?? '')) b--;
  return s.slice(a, b);
}

const pyStrip = (s: string): string => s.replace(/^[\s\u001c-\u001f\u0085]+|[\s\u001c-\u001f\u0085]+$/gu, '');

function normalizeSpecial(value: string | null): string {
  if (value === null) return '0';
  let s = pyStrip(value);
  if (s.endsWith('%')) return pyStrip(s.slice(0, -1));
  if (s.includes(',') && !s.startsWith('[') && !s.endsWith(']')) s = s.replace(/,/g, '');
  return SPECIAL[s.toLowerCase()] ?? s;
}

const cleanItem = (v: string): string => normalizeSpecial(stripChars(pyStrip(v), `'"`));

function cleanMysqlResult(result: string): string[] | null {
  if (!(result.startsWith('[') && result.endsWith(']'))) return null;
  try {
    const parsed = pyLiteralEval(result);
    if (parsed.t === 'list' && parsed.items.every((i) => i.t === 'tuple')) {
      const out: string[] = [];
      for (const item of parsed.items) {
        if (item.t === 'tuple' && item.items.length === 1) out.push(stripChars(pyStrip(pyStr(item.items[0] as PyLit)), `'"`));
      }
      return out;
    }
  } catch {
    // fall through to the single-tuple form
  }
  const inner = stripChars(result, '[]');
  if ((inner.match(/\(/g) ?? []).length === 1 && inner.startsWith('(') && inner.endsWith(',)')) {
    return [stripChars(pyStrip(inner.slice(1, -2)), `'"`)];
  }
  return null;
}

/** answers as main-fc's DBResultProcessor._clean_answer normalises them */
export function cleanFcAnswer(answer: string | readonly unknown[] | null): string[] {
  if (answer === null) return ['0'];
  if (typeof answer === 'string') {
    const mysql = cleanMysqlResult(answer);
    if (mysql !== null) return mysql.map(normalizeSpecial);
    const a = pyStrip(answer);
    if (a.startsWith('[') && a.endsWith(']')) {
      try {
        const v = pyLiteralEval(a);
        if (v.t === 'list') {
          return v.items.map((item) => {
            const inner = item.t === 'tuple' && item.items.length === 1 ? (item.items[0] as PyLit) : item;
            return normalizeSpecial(stripChars(pyStrip(pyStr(inner)), `'"`));
          });
        }
      } catch {
        const items: string[] = [];
        let cur = '';
        let inQuotes = false;
        for (const ch of a.slice(1, -1)) {
          if (ch === '"' || ch === "'") inQuotes = !inQuotes;
          else if (ch === ',' && !inQuotes) {
            if (cur) {
              items.push(cleanItem(cur));
              cur = '';
            }
          } else cur += ch;
        }
        if (cur) items.push(cleanItem(cur));
        return items;
      }
      // eval gave a non-list: Python falls through and returns None here (an error later)
      return [];
    }
    return [cleanItem(a)];
  }
  return answer.map((item) => {
    const s = typeof item === 'string' ? item : item === null ? 'None' : typeof item === 'number' ? String(item) : JSON.stringify(item);
    return cleanItem(s);
  });
}

function isFloatStr(s: string): boolean {
  return pyFloat(s) !== null;
}

function floatEqual(a: string, b: string, tol = 1e-2): boolean {
  const fa = pyFloat(a);
  const fb = pyFloat(b);
  return fa !== null && fb !== null && Math.abs(fa - fb) <= tol;
}

/** main-fc's looser comparison (percent, thousands separators, null-likes, 0.01 float tolerance) */
export function compareFc(answer: string | readonly unknown[] | null, groundTruth: string | readonly string[] | null, type: TaskType): boolean {
  const a = cleanFcAnswer(answer);
  const g = cleanFcAnswer(groundTruth);
  if (isWriteType(type)) return a.length === g.length && a.every((x, i) => x === g[i]);
  if (a.length === 1 && g.length === 1) {
    const av = a[0] as string;
    const gv = g[0] as string;
    if (av === '0' && gv === '0') return true;
    if (isFloatStr(av) && isFloatStr(gv)) return floatEqual(av, gv);
    return av === gv;
  }
  if (a.every(isFloatStr) && g.every(isFloatStr)) {
    if (a.length !== g.length) return false;
    const used = g.map(() => false);
    for (const x of a) {
      const i = g.findIndex((y, j) => !used[j] && floatEqual(x, y));
      if (i < 0) return false;
      used[i] = true;
    }
    return used.every(Boolean);
  }
  const sa = new Set(a);
  const sg = new Set(g);
  return sa.size === sg.size && [...sa].every((x) => sg.has(x));
}

/** main-fc extracts the bare hash from the hash query's repr: `[('abc…',)]` → `abc…` */
export function fcHashValue(hashRepr: string): string {
  const cleaned = stripChars(hashRepr, '[]()');
  return stripChars(pyStrip(cleaned.split(',')[0] ?? ''), "'");
}

// ---------------------------------------------------------------- metrics

export interface EpisodeOutcome {
  type: TaskType;
  correct: boolean;
}

export interface DbbenchMetrics {
  /** accuracy per task type, plus SELECT (all but INSERT/UPDATE) */
  accuracy: Record<string, number>;
  counts: Record<string, { correct: number; total: number }>;
  /** mean of the SELECT, INSERT and UPDATE accuracies (AgentBench's overall_cat_accuracy) */
  overall: number;
}

/** AgentBench's calculate_overall: a type with no episodes scores 0 */
export function computeMetrics(outcomes: readonly EpisodeOutcome[]): DbbenchMetrics {
  const counts: Record<string, { correct: number; total: number }> = {};
  for (const typ of [...TASK_TYPES, 'SELECT']) counts[typ] = { correct: 0, total: 0 };
  for (const o of outcomes) {
    const keys = o.type === 'INSERT' || o.type === 'UPDATE' ? [o.type] : [o.type, 'SELECT'];
    for (const k of keys) {
      const c = (counts[k] ??= { correct: 0, total: 0 });
      c.total++;
      if (o.correct) c.correct++;
    }
  }
  const accuracy: Record<string, number> = {};
  for (const [k, c] of Object.entries(counts)) accuracy[k] = c.total === 0 ? 0 : c.correct / c.total;
  const overall = ((accuracy.SELECT ?? 0) + (accuracy.INSERT ?? 0) + (accuracy.UPDATE ?? 0)) / 3;
  return { accuracy, counts, overall };
}
