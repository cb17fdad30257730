import type { Config } from '../config/Config.js';
import type { Logger } from '../log/Logger.js';
import type { Breaker } from '../health/Breaker.js';
import type { Metrics } from '../health/Metrics.js';
import * as Claude from './Claude.js';
import * as Extractive from './Extractive.js';
import type { Synthesizer } from './Synthesizer.js';

/** The configured synthesizer: extractive (the offline default), or Claude with the extractive one as its fallback. */
export function fromConfig(config: Config, options: { logger: Logger; breaker?: Breaker | undefined; metrics?: Metrics | undefined }): Synthesizer {
  const extractive = Extractive.create();
  if (config.synthesis.provider === 'extractive') return extractive;
  return Claude.create({ ...config.synthesis, fallback: extractive, ...options });
}
