/** Moved to experiments/commands/table.ts; kept for the benches that import it from here. */
export * from '../commands/table.ts';
