/**
 * The CLI's one error handler: `hr1: <message>` on stderr and a non-zero exit, never a stack unless
 * HR1_DEBUG=1 (or --debug) asks for one.
 */
import { CommanderError } from 'commander';
import { Hr1Error } from '../../cluster/errors.ts';

/** Whether stacks were asked for: HR1_DEBUG set (not 0/false/empty) or --debug on the command line. */
export function debugWanted(argv: readonly string[] = process.argv, env: NodeJS.ProcessEnv = process.env): boolean {
  const d = env.HR1_DEBUG;
  return (d !== undefined && d !== '' && d !== '0' && d.toLowerCase() !== 'false') || argv.includes('--debug');
}

/** An error the project raised on purpose: an Hr1Error, or (across realms, or an error class that is not one yet) an Error with a string code. */
function isProjectError(e: unknown): e is Error & { code: string } {
  if (e instanceof Hr1Error) return true;
  const code: unknown = (e as { code?: unknown } | null)?.code;
  if (!(e instanceof Error) || typeof code !== 'string') return false;
  // Node's own errors (system calls, ERR_*) carry codes too; they are unexpected here
  return !('syscall' in e) && !code.startsWith('ERR_');
}

function stackOf(e: unknown): string {
  if (!(e instanceof Error)) return String(e);
  const parts = [e.stack ?? `${e.name}: ${e.message}`];
  const remote = (e as { remoteStack?: unknown }).remoteStack;
  if (typeof remote === 'string' && remote !== e.stack) parts.push(`remote stack:\n${remote}`);
  if (e.cause !== undefined) parts.push(`caused by: ${stackOf(e.cause)}`);
  return parts.join('\n');
}

/** What to print for a thrown value, and the exit code. */
export function formatCliError(e: unknown, debug = debugWanted()): { text: string; exitCode: number } {
  const trace = debug ? `${stackOf(e)}\n` : '';
  if (e instanceof CommanderError) return { text: `hr1: ${e.message}\n${trace}`, exitCode: e.exitCode || 2 };
  if (isProjectError(e)) return { text: `hr1: ${e.name} [${e.code}]: ${e.message}\n${trace}`, exitCode: 2 };
  const message = e instanceof Error ? e.message || e.name : String(e);
  if (debug) return { text: `hr1: ${message} (unexpected error)\n${trace}`, exitCode: 1 };
  return { text: `hr1: ${message} (unexpected error: rerun with HR1_DEBUG=1 for the stack)\n`, exitCode: 1 };
}

/** Print the error as {@link formatCliError} says and exit (embedded nats-servers die with the process). */
export function exitWithError(e: unknown): never {
  const r = formatCliError(e);
  process.stderr.write(r.text);
  process.exit(r.exitCode);
}

/** Errors that escape every action's promise (a stray rejection, a throw in a callback) end the same way. */
export function installFatalHandlers(): void {
  process.on('uncaughtException', (e) => exitWithError(e));
  process.on('unhandledRejection', (e) => exitWithError(e));
  // SIGINT/SIGTERM: exit through process.exit, so the exit hooks stop an embedded nats-server;
  // commands that stop gracefully on a signal (hr1 node, hr1 serve) listen themselves and win
  for (const [sig, code] of [['SIGINT', 130], ['SIGTERM', 143]] as const) {
    process.on(sig, () => {
      if (process.listenerCount(sig) === 1) process.exit(code);
    });
  }
}
