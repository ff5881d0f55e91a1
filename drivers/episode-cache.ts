/**
 * The episode cache: records keyed by the hash of (env, task, seed, target, patch hash, harness
 * version, env options). Re-running an identical rollout costs nothing, a crashed run resumes,
 * and a fault changes no result. A SQLite file, so it survives restarts.
 */
import Database from 'better-sqlite3';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { createHash } from 'node:crypto';
import { pack, unpack } from '../cluster/codec.ts';
import { EpisodeRecordSchema, canonicalJson, isInfraStatus, type EpisodeRecord } from '../harness/index.ts';

/** Everything that decides an episode's result. */
export interface EpisodeKey {
  env: string;
  taskId: string;
  seed: number;
  target: string;
  /** sha256 of the canonical patch ('' for none) */
  patch: string;
  /** harnessVersion(): the runtime version and every layer's hash */
  harness: string;
  envOptions: Record<string, unknown>;
  /** the target backend's settings (RolloutSpec.targetOptions); absent when none */
  targetOptions?: Record<string, unknown>;
}

export function episodeKey(k: EpisodeKey): string {
  return createHash('sha256').update(canonicalJson(k)).digest('hex');
}

/** @default '.hr1/cache/episodes.sqlite' under the working directory */
export const DEFAULT_CACHE_PATH = '.hr1/cache/episodes.sqlite';

export class EpisodeCache {
  private db: Database.Database;
  private getStmt: Database.Statement;
  private putStmt: Database.Statement;
  hits = 0;
  misses = 0;

  constructor(readonly path: string = DEFAULT_CACHE_PATH) {
    if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
    this.db = new Database(path);
    this.db.pragma('journal_mode = WAL');
    this.db.exec('CREATE TABLE IF NOT EXISTS episodes (key TEXT PRIMARY KEY, env TEXT, task TEXT, seed INTEGER, target TEXT, patch TEXT, record BLOB, created INTEGER)');
    this.getStmt = this.db.prepare('SELECT record FROM episodes WHERE key = ?');
    this.putStmt = this.db.prepare('INSERT OR REPLACE INTO episodes (key, env, task, seed, target, patch, record, created) VALUES (?, ?, ?, ?, ?, ?, ?, ?)');
  }

  /**
   * The record stored under `key`, checked against the record schema; a row that does not hold
   * a record of today's shape (written by an older version, or damaged) counts as a miss, and
   * the episode is run again and stored over it.
   */
  get(key: string): EpisodeRecord | undefined {
    const row = this.getStmt.get(key) as { record: Buffer } | undefined;
    let rec: EpisodeRecord | undefined;
    if (row) {
      try {
        const r = EpisodeRecordSchema.safeParse(unpack(row.record));
        // an infra error stored by an older version is not a result: a miss
        if (r.success && !isInfraStatus(r.data.outcome.status)) rec = r.data;
      } catch {
        // not msgpack: a miss
      }
    }
    if (rec === undefined) this.misses++;
    else this.hits++;
    return rec;
  }

  /** store a result; an episode that ended in an infra error is not a result and is never stored */
  put(key: string, k: EpisodeKey, rec: EpisodeRecord): void {
    if (isInfraStatus((rec as Partial<EpisodeRecord>).outcome?.status ?? '')) return;
    // created is bookkeeping only; no result depends on it
    this.putStmt.run(key, k.env, k.taskId, k.seed, k.target, k.patch, Buffer.from(pack(rec)), Date.now());
  }

  size(): number {
    return (this.db.prepare('SELECT COUNT(*) AS n FROM episodes').get() as { n: number }).n;
  }

  close(): void {
    this.db.close();
  }
}
