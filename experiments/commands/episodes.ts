/** `hr1 episodes export RUN_DIR`: a run folder's episodes as JSONL trajectories, on stdout or in a file. */
import { createWriteStream, type WriteStream } from 'node:fs';
import { once } from 'node:events';

export interface EpisodesExportOptions {
  format?: string | undefined;
  filter?: string[] | undefined;
  out?: string | undefined;
}

export async function episodesExport(runDir: string, o: EpisodesExportOptions): Promise<void> {
  const { exportEpisodes, parseEpisodeFilter, requireRun } = await import('../runs/index.ts');
  // every input checked before a file is created
  requireRun(runDir);
  const filter = parseEpisodeFilter(o.filter ?? []);
  const file: WriteStream | null = o.out ? createWriteStream(o.out) : null;
  const sink = file ?? process.stdout;
  const write = async (line: string) => {
    if (!sink.write(line)) await once(sink, 'drain');
  };
  try {
    const r = await exportEpisodes(runDir, { format: o.format ?? 'jsonl', filter, write });
    const missing = r.missing ? `; ${r.missing} not in the episode cache (left out)` : '';
    process.stderr.write(`hr1 episodes export: ${r.written} episodes${o.out ? ` to ${o.out}` : ''}${missing}\n`);
  } finally {
    if (file) {
      file.end();
      await once(file, 'close');
    }
  }
}
