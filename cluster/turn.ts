/**
 * One turn of the event loop from inside a long loop of awaits that resolve at once (a loop over
 * synchronous work): timers, I/O and signal handlers run, so SIGINT/SIGTERM stop the process
 * within a turn instead of after the loop. Microtasks alone (awaiting a resolved promise) never
 * let a signal through.
 */
export const turnEventLoop = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));
