/**
 * Game data: the vendored compact set (envs/alfworld/data/games.json.gz, built from ALFWorld's
 * valid_seen and valid_train by scripts/build-data.ts) or a user's upstream layout
 * (<dataDir>/json_2.1.1/<split>/<task>/<trial>/game.tw-pddl, or <dataDir> = json_2.1.1 itself).
 */
import { readFileSync, readdirSync, existsSync, statSync } from 'node:fs';
import { gzipSync, gunzipSync } from 'node:zlib';
import { join, relative, sep, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { AlfworldError } from './errors.ts';
import { buildGame, grammarTaskOf, sourceFromGameJson, withTask, taskTypeOf, type Game, type GameSource } from './game.ts';
import type { Formula, ProblemDef } from './pddl.ts';

export const VENDORED_FILE = join(dirname(fileURLToPath(import.meta.url)), 'data', 'games.json.gz');
export const COMPACT_FORMAT = 'hr1-alfworld-compact/1';
const PLACEHOLDER = 'UNKNOWN GOAL.';

export interface CompactGame {
  id: string;
  split: string;
  taskType: string;
  d: number;
  g: number;
  task: string;
  objects: string[];
  /** type index per object */
  otypes: number[];
  /** [pred, arg0, arg1?] with indices into preds and objects */
  init: number[][];
  goal: Formula;
  walkthrough: string[];
}
export interface CompactData {
  format: string;
  sources: string;
  domains: string[];
  grammars: string[];
  types: string[];
  preds: string[];
  games: CompactGame[];
}

export function toCompact(sources: readonly GameSource[], note: string): CompactData {
  const out: CompactData = { format: COMPACT_FORMAT, sources: note, domains: [], grammars: [], types: [], preds: [], games: [] };
  const intern = (arr: string[], s: string): number => {
    let i = arr.indexOf(s);
    if (i < 0) {
      i = arr.length;
      arr.push(s);
    }
    return i;
  };
  for (const s of sources) {
    const task = grammarTaskOf(s.grammar);
    if (task === undefined) throw new AlfworldError('ALFWORLD_BAD_GAME', 'grammar has no task rule', { file: s.file, field: 'grammar' });
    const objIdx = new Map<string, number>();
    const objects: string[] = [];
    const otypes: number[] = [];
    for (const o of s.problem.objects) {
      if (objIdx.has(o.name)) continue;
      objIdx.set(o.name, objects.length);
      objects.push(o.name);
      otypes.push(intern(out.types, o.type));
    }
    const init = s.problem.init.map((f) => [intern(out.preds, f.p), ...f.args.map((a) => {
      const i = objIdx.get(a);
      if (i === undefined) throw new AlfworldError('ALFWORLD_BAD_GAME', `"${a}" is used in :init but not declared`, { file: s.file, field: 'pddl_problem:objects' });
      return i;
    })]);
    out.games.push({
      id: s.id,
      split: s.split,
      taskType: s.taskType,
      d: intern(out.domains, s.domain),
      g: intern(out.grammars, withTask(s.grammar, PLACEHOLDER)),
      task,
      objects,
      otypes,
      init,
      goal: s.problem.goal,
      walkthrough: s.walkthrough,
    });
  }
  return out;
}

export function fromCompact(c: CompactData, file: string): GameSource[] {
  if (c.format !== COMPACT_FORMAT) throw new AlfworldError('ALFWORLD_BAD_DATA', `unknown compact format "${c.format}"`, { file, field: 'format' });
  return c.games.map((g) => {
    const problem: ProblemDef = {
      name: g.id,
      objects: g.objects.map((n, i) => ({ name: n, type: c.types[g.otypes[i]!]! })),
      init: g.init.map(([p, ...args]) => ({ p: c.preds[p!]!, args: args.map((a) => g.objects[a]!) })),
      goal: g.goal,
    };
    return {
      id: g.id,
      split: g.split,
      taskType: g.taskType,
      file: `${file}#${g.id}`,
      domain: c.domains[g.d]!,
      grammar: withTask(c.grammars[g.g]!, g.task),
      problem,
      walkthrough: g.walkthrough,
    };
  });
}

export function writeCompact(c: CompactData): Buffer {
  return gzipSync(Buffer.from(JSON.stringify(c)), { level: 9 });
}
export function readCompact(file: string): CompactData {
  let buf: Buffer;
  try {
    buf = readFileSync(file);
  } catch (e) {
    throw new AlfworldError('ALFWORLD_BAD_DATA', `cannot read the compact game set: ${(e as Error).message}`, { file, cause: e });
  }
  try {
    return JSON.parse(gunzipSync(buf).toString('utf8')) as CompactData;
  } catch (e) {
    throw new AlfworldError('ALFWORLD_BAD_DATA', `corrupt compact game set: ${(e as Error).message}`, { file, cause: e });
  }
}

/** Find every game.tw-pddl under an upstream-layout directory. */
export function findGameFiles(dataDir: string, split?: string): { file: string; id: string; split: string }[] {
  let root = dataDir;
  if (existsSync(join(dataDir, 'json_2.1.1'))) root = join(dataDir, 'json_2.1.1');
  if (!existsSync(root)) throw new AlfworldError('ALFWORLD_BAD_DATA', 'data directory does not exist', { file: dataDir });
  const out: { file: string; id: string; split: string }[] = [];
  const walk = (d: string) => {
    for (const name of readdirSync(d).sort()) {
      const p = join(d, name);
      if (statSync(p).isDirectory()) walk(p);
      else if (name === 'game.tw-pddl') {
        const rel = relative(root, dirname(p)).split(sep).join('/');
        const sp = rel.split('/')[0] ?? '';
        if (split && sp !== split) continue;
        out.push({ file: p, id: rel, split: sp });
      }
    }
  };
  walk(root);
  return out;
}

export function sourcesFromDir(dataDir: string, split?: string): GameSource[] {
  return findGameFiles(dataDir, split).map((f) =>
    sourceFromGameJson(readFileSync(f.file, 'utf8'), f.file, { id: f.id, split: f.split, taskType: taskTypeOf(f.id) }),
  );
}

export interface LoadOpts {
  /** upstream layout directory; default: the vendored compact set */
  dataDir?: string;
  /** only this split (valid_seen, valid_train, …) */
  split?: string;
}

export interface GameSet {
  games: Game[];
  byId: Map<string, Game>;
  get(id: string): Game;
}

const cache = new Map<string, GameSet>();

export function makeGameSet(games: Game[]): GameSet {
  const byId = new Map(games.map((g) => [g.id, g]));
  return {
    games,
    byId,
    get(id: string) {
      const g = byId.get(id) ?? games.find((x) => x.id.includes(id));
      if (!g) throw new AlfworldError('ALFWORLD_UNKNOWN_GAME', `no game "${id}" in this game set`);
      return g;
    },
  };
}

/** Load games (cached per data source and split). */
export function loadGames(opts: LoadOpts = {}): GameSet {
  const key = `${opts.dataDir ?? '<vendored>'}|${opts.split ?? ''}`;
  const hit = cache.get(key);
  if (hit) return hit;
  let sources: GameSource[];
  if (opts.dataDir) sources = sourcesFromDir(opts.dataDir, opts.split);
  else {
    sources = fromCompact(readCompact(VENDORED_FILE), VENDORED_FILE);
    if (opts.split) sources = sources.filter((s) => s.split === opts.split);
  }
  const set = makeGameSet(sources.map(buildGame));
  cache.set(key, set);
  return set;
}

/** Load one game file (upstream game.tw-pddl) by path. */
export function loadGameFile(file: string, id?: string): Game {
  const rel = id ?? file.split(sep).join('/').replace(/^.*json_2\.1\.1\//, '').replace(/\/game\.tw-pddl$/, '');
  const sp = rel.split('/')[0] ?? '';
  return buildGame(sourceFromGameJson(readFileSync(file, 'utf8'), file, { id: rel, split: sp, taskType: taskTypeOf(rel) }));
}
