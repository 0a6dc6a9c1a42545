import type { LogLevel } from '@/lib/tools/define';

/** notifications/message: a tool's log message for its client. */
export function logNotification(level: LogLevel, data: unknown, logger?: string, meta?: Record<string, unknown>) {
  return {
    jsonrpc: '2.0' as const,
    method: 'notifications/message',
    params: { level, ...(logger !== undefined ? { logger } : {}), data: data ?? null, ...(meta ? { _meta: meta } : {}) },
  };
}
