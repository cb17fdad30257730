import type { Config } from '../config/Config.js';

/**
 * A point in a paid query where a test can have the process killed (PROFILE_EDGE_CRASH_AT, honoured only with
 * ENVIRONMENT=test), to show what a crash there leaves behind and who settles it.
 */
export function crashPoint(config: Config, at: NonNullable<Config['payments']['crashAt']>): void {
  if (config.payments.crashAt === at) process.kill(process.pid, 'SIGKILL');
}
