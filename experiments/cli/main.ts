/**
 * The hr1 CLI's entry: installs the signal and error handlers, loads --module files and the env
 * registry, then parses the arguments with the definitions of program.ts. Errors end in the one
 * handler at the bottom (experiments/cli/errors.ts).
 */
import { exitWithError, installFatalHandlers } from './errors.ts';
import { preloadModules } from '../commands/modules.ts';
import { installSignalHandlers, shutdownAndExit, shutdownInProgress } from '../../cluster/signals.ts';
import { loadEnvRegistry, program } from './program.ts';

/**
 * SIGINT, SIGTERM, SIGHUP: the registered cleanups (cluster/signals.ts: runtimes with their
 * actors, embedded nats-servers, a hosting node) run once within 5 s, the children left are
 * stopped, and the process exits with 128 + the signal's number; a second signal exits at once.
 * While that runs, the errors it causes in the commands (closed clusters) are not reported.
 */
function installStopHandlers(): void {
  installSignalHandlers();
  const events: NodeJS.EventEmitter = process;
  for (const ev of ['uncaughtException', 'unhandledRejection']) {
    for (const l of events.listeners(ev) as ((...x: unknown[]) => void)[]) {
      events.removeListener(ev, l);
      events.on(ev, (...a: unknown[]) => {
        if (!shutdownInProgress()) l(...a);
      });
    }
  }
  // `hr1 status | head -1`: the reader went away; stop quietly (cleanups run) with exit code 0
  for (const stream of [process.stdout, process.stderr]) {
    stream.on('error', (e: NodeJS.ErrnoException) => {
      if (e.code === 'EPIPE' || e.code === 'ERR_STREAM_DESTROYED') {
        void shutdownAndExit(0, 'EPIPE');
        return;
      }
      if (!shutdownInProgress()) exitWithError(e);
    });
  }
}

/** The one error handler: every action's error (async, or thrown while importing its module) ends here. */
async function main(): Promise<void> {
  installFatalHandlers();
  installStopHandlers();
  try {
    // modules first (--module FILE): what they register (an env) is then known to every option check
    await preloadModules(process.argv);
    if (!process.argv.slice(2).some((a) => a === '--help' || a === '-h' || a === 'help')) await loadEnvRegistry();
    await program.parseAsync(process.argv);
  } catch (e) {
    // stopping on a signal: the error is the signal's doing (a closed cluster); the handler exits
    if (shutdownInProgress()) return;
    // the actions have shut their clusters down (finally) by now; an embedded nats-server left by
    // anything else is killed by its exit hook
    exitWithError(e);
  }
}

await main();
