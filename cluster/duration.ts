import { z } from 'zod';

const UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** A duration as call options and cluster options take it: milliseconds, or a string like `"30s"`. */
export type Duration = number | string;

/** Parse a duration given as milliseconds or a string like `"250ms"`, `"30s"`, `"2m"`. */
export function parseDuration(v: Duration): number {
  if (typeof v === 'number') {
    if (!Number.isFinite(v) || v < 0) throw new RangeError(`duration must be a non-negative number of ms, got ${v}`);
    return v;
  }
  const m = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*$/.exec(v);
  if (!m) throw new RangeError(`duration "${v}" is not understood; use ms as a number or a string like "500ms", "30s", "2m"`);
  return Number(m[1]) * (UNITS[m[2] ?? 'ms'] ?? 1);
}

/** A zod schema for durations: a number of ms or a string like "30s"; resolves to ms. */
export const zDuration = z.union([z.number(), z.string()]).transform((v, ctx) => {
  try {
    return parseDuration(v);
  } catch (e) {
    ctx.addIssue({ code: 'custom', message: (e as Error).message });
    return z.NEVER;
  }
});

/** {@link zDuration} that must also be above zero (a timeout, an interval). */
export const zPositiveDuration = zDuration.refine((ms) => ms > 0, { message: 'duration must be above 0 (ms as a number, or a string like "30s")' });
