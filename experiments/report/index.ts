/** Report building blocks: seeded bootstrap intervals, markdown tables, charts (SVG/PNG), CSV. */
export { bootstrapStrata, bootstrapGroups, bootstrapMean, pairedDelta, meanStd, DEFAULT_RESAMPLES, DEFAULT_LEVEL, type BootstrapOptions, type Interval } from './bootstrap.ts';
export { mdTable, textTable, fmtPct, fmtDelta, fmtMeanStd } from './markdown.ts';
export { barChart, heatmap, svgToPng, type BarSeries } from './plots.ts';
export { taskSeedMatrix, rowMean, rowsToCsv, interventionRate, fmtInterventions, type Metric } from './data.ts';
