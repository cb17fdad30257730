import type { Config } from '../config/Config.js';
import { lazy } from '../errors/Lazy.js';
import type { Logger } from '../log/Logger.js';
import type { Breaker } from '../health/Breaker.js';
import type { Metrics } from '../health/Metrics.js';
import * as Extractive from './Extractive.js';
import type { Synthesizer } from './Synthesizer.js';

/**
 * The configured synthesizer: extractive (the offline default), or Claude with the extractive one as its fallback.
 * Claude's module (and its SDK) loads with the first answer it writes, not with the process: commands that never
 * answer, and servers configured without it, never pay for it. Should it fail to load, answers are extractive, as when
 * the model is down, and the reason is logged on one line.
 */
export function fromConfig(config: Config, options: { logger: Logger; breaker?: Breaker | undefined; metrics?: Metrics | undefined }): Synthesizer {
  const extractive = Extractive.create();
  const synthesis = config.synthesis;
  if (synthesis.provider === 'extractive') return extractive;
  const claude = lazy("Claude's synthesizer (@anthropic-ai/sdk)", () => import('./Claude.js').then((Claude) => Claude.create({ ...synthesis, fallback: extractive, ...options })));
  return {
    async synthesize(input) {
      const model = await claude().catch((error: unknown) => {
        options.logger.error((error as Error).message);
        return undefined;
      });
      if (model) return model.synthesize(input);
      options.metrics?.fallback('synthesizer');
      const answer = await extractive.synthesize(input);
      return { ...answer, notes: [...(answer.notes ?? []), 'model-written answer unavailable (its library could not be loaded); extractive answer given'], degraded: ['model'] };
    },
  };
}
