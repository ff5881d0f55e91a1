/** Report building blocks: seeded bootstrap intervals, markdown tables, charts (SVG/PNG), CSV. */
export { bootstrapStrata, bootstrapGroups, bootstrapMean, pairedDelta, meanStd, DEFAULT_RESAMPLES, DEFAULT_LEVEL, type BootstrapOptions, type Interval } from './bootstrap.ts';
export { mdTable, textTable, fmtPct, fmtDelta, fmtMeanStd } from './markdown.ts';
export { barChart, heatmap, svgToPng, type BarSeries } from './plots.ts';
export { taskSeedMatrix, rowMean, rowsToCsv, interventionRate, fmtInterventions, csvCell, type Metric } from './data.ts';
export { methodColour, METHOD_COLOURS, HASHED_COLOURS } from './colours.ts';
export { panelChart, legendLayout, textWidth, wrapLabel, LEGEND_FONT_SIZE, LEGEND_ICON_WIDTH, type Panel } from './plots.ts';
export { summarizeRun, SUMMARY_KIND, type RunSummary, type SummaryGroup, type SummaryAverage, type SummaryInterval } from './summary.ts';
export { scalarsToCsv, trainScalars, expScalars, SCALAR_COLUMNS, type Scalar } from './scalars.ts';
export { trainingChart, writeTrainReport, writeTrainScalars, TRAINING_PLOT } from './training.ts';
