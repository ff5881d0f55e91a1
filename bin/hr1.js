#!/usr/bin/env node
// the package bin: registers the TypeScript loader, then runs the CLI
import { register } from 'tsx/esm/api';

register();
await import('../experiments/cli/main.ts');
