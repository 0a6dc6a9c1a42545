import { getMcpSessionById } from '@/db/queries/sessions';
import { logLevels, type LogLevel } from '@/lib/tools/define';

/**
 * Resolves with whether a log message of this level reaches the session's client: those at or above
 * the level it set with logging/setLevel, and every one until it sets a level (the spec leaves that to
 * the server). The level is read per message, so that a change reaches calls already running.
 */
export async function isLoggedFor(sessionId: string, level: LogLevel): Promise<boolean> {
  const threshold = (await getMcpSessionById(sessionId))?.logLevel as LogLevel | null | undefined;
  if (!threshold) return true;
  return logLevels.indexOf(level) >= logLevels.indexOf(threshold);
}
