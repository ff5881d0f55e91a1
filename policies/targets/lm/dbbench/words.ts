/**
 * DBBench's share of the learned targets' word list (vocab.ts): texts with weights, from the
 * protocol prompt, SQL's words, the env's error texts, the training tables (synth.ts: no dev
 * table) and synthetic questions. Deterministic.
 */
import { Rng } from '../../../../cluster/rng.ts';
import { V02_PROMPT } from '../../../../envs/dbbench/index.ts';
import { synthTasks, trainingTables } from './synth.ts';

/** SQL's keywords and functions (never value slots: dbbench/slots.ts) */
export const SQL_KEYWORDS = 'SELECT FROM WHERE AND OR NOT IN IS NULL LIKE ORDER BY ASC DESC LIMIT GROUP HAVING DISTINCT AS CAST DECIMAL SIGNED COUNT SUM MIN MAX AVG INSERT INTO VALUES UPDATE SET DELETE BETWEEN JOIN ON OFFSET'.split(' ');

/** SQL words and the env's error and answer texts a model reads and writes */
export const SQL_WORDS = [
  'Action: Operation Answer Final Answer sql',
  'SELECT FROM WHERE AND OR NOT IN IS NULL LIKE ORDER BY ASC DESC LIMIT GROUP HAVING DISTINCT AS CAST DECIMAL SIGNED',
  'COUNT SUM MIN MAX AVG INSERT INTO VALUES UPDATE SET DELETE',
  "1064 (42000): You have an error in your SQL syntax; check the manual that corresponds to your MySQL server version for the right syntax to use near '' at line 1",
  "1054 (42S22): Unknown column 'x' in 'field list'",
  "1146 (42S02): Table 'x' doesn't exist",
  "1136 (21S01): Column count doesn't match value count at row 1",
  'None True False Decimal',
];

/** [text, weight] pairs for the harvest. */
export async function dbbenchHarvest(): Promise<[string, number][]> {
  const out: [string, number][] = [[V02_PROMPT, 1000], ...SQL_WORDS.map((t): [string, number] => [t, 1000])];
  for (const t of trainingTables()) {
    out.push([t.name, 5], [t.columns.join(' '), 5]);
    for (const r of t.rows) out.push([r.filter((c) => c !== null).join(' '), 1]);
  }
  for (const t of await synthTasks(new Rng('lm-vocab:dbbench'), 300)) out.push([t.description, 1], [t.addDescription, 1]);
  return out;
}
