/** Episodes of a run folder as plain JSON trajectories, one a line (`hr1 episodes export`). */
import type { EpisodeRecord } from '../../harness/index.ts';
import { EpisodeReader, listEpisodes, type EpisodeFilter, type EpisodeRef } from './episodes.ts';
import { RunsError } from './errors.ts';

/** Formats `hr1 episodes export` writes. */
export const EXPORT_FORMATS = ['jsonl'] as const;
export type ExportFormat = (typeof EXPORT_FORMATS)[number];

/** One exported line: the episode's reference, its outcome and its steps. */
export interface ExportedEpisode extends Omit<EpisodeRef, 'key'> {
  goal: string;
  taskType: string;
  model: string;
  outcome: EpisodeRecord['outcome'];
  interventions: EpisodeRecord['interventions'] | null;
  steps: EpisodeRecord['steps'];
}

export interface ExportOptions {
  /** @default 'jsonl' */
  format?: string;
  filter?: EpisodeFilter;
  /** where each line goes (with its newline); awaited, so a slow sink holds the export back */
  write: (line: string) => void | Promise<void>;
}

/**
 * Write the run folder's episodes that match `filter`, one JSON object a line; episodes the cache
 * no longer holds are counted in `missing`, not written.
 *
 * @example
 * await exportEpisodes('runs/main-1a2b3c4d5e', { filter: { method: 'vanilla' }, write: (l) => process.stdout.write(l) });
 */
export async function exportEpisodes(runDir: string, o: ExportOptions): Promise<{ written: number; missing: number }> {
  const format = o.format ?? 'jsonl';
  if (!(EXPORT_FORMATS as readonly string[]).includes(format)) throw new RunsError('RUNS_BAD_FORMAT', `--format ${format}: this hr1 exports ${EXPORT_FORMATS.join(', ')}; write --format jsonl`, { format });
  const refs = listEpisodes(runDir, o.filter ?? {});
  const reader = new EpisodeReader(runDir);
  let written = 0;
  let missing = 0;
  try {
    for (const ref of refs) {
      const rec = reader.record(ref);
      if (!rec) {
        missing++;
        continue;
      }
      const { key: _key, ...plain } = ref;
      const line: ExportedEpisode = { ...plain, goal: rec.goal, taskType: rec.taskType, model: rec.model, outcome: rec.outcome, interventions: rec.interventions ?? null, steps: rec.steps };
      await o.write(`${JSON.stringify(line)}\n`);
      written++;
    }
  } finally {
    reader.close();
  }
  return { written, missing };
}
