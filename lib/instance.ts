const globalForInstance = globalThis as unknown as { __mcpTaskServerInstanceId?: string };

/**
 * This process, among the instances that share a database: the runner its task leases name and the
 * holder of its stream places. On globalThis because Next.js may load this module once per route bundle,
 * and every copy must give the same answer.
 */
export const instanceId = (globalForInstance.__mcpTaskServerInstanceId ??= crypto.randomUUID());
