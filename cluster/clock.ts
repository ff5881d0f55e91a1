/**
 * The wall clock as a value passed in. Code under envs/ and policies/ never reads the time
 * itself: it takes a Clock from its options (tests pass a fixed one), and this module holds the
 * one default that reads the system.
 */
export interface Clock {
  /** milliseconds since the epoch */
  nowMs(): number;
}

/** The system clock. */
export const systemClock: Clock = { nowMs: () => Date.now() };

/** A clock that always says `ms` (tests, reproducible fixtures). */
export function fixedClock(ms: number): Clock {
  return { nowMs: () => ms };
}
