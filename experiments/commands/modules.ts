/** `--module FILE`: a user's module loaded before the command runs (it may register an env or actors). */
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { CommandError } from './errors.ts';

/** The `--module` values of an argv (`--module F` and `--module=F`, repeatable), in order. */
export function moduleArgs(argv: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--module' && argv[i + 1] !== undefined) out.push(argv[++i]!);
    else if (a.startsWith('--module=')) out.push(a.slice('--module='.length));
  }
  return out;
}

/** Import user modules in order (paths relative to the working directory); one that fails to load is a typed error naming it. */
export async function loadModules(files: readonly string[]): Promise<void> {
  for (const m of files) {
    try {
      await import(pathToFileURL(resolve(m)).href);
    } catch (e) {
      throw new CommandError('BAD_MODULE', `--module ${m}: cannot load it (${(e as Error).message}); pass a .ts or .js file that defines actors with defineActor() or registers an env with registerEnv()`, { cause: e });
    }
  }
}

/** Import every `--module` of an argv, before the command's options are checked. */
export function preloadModules(argv: readonly string[]): Promise<void> {
  return loadModules(moduleArgs(argv));
}
