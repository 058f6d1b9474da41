// The size of a JSON value as the `max_bytes` rule counts it: its compact JSON text, strings by
// their UTF-8 bytes (escapes not counted). The walk stops once past the limit, so measuring a
// huge value costs no more than reaching the limit.

/** What a REST body or a decoded message holds: plain JSON, 64-bit integers possibly as bigint. */
export type SizedJson = string | number | bigint | boolean | null | readonly SizedJson[] | { readonly [key: string]: SizedJson };

/** The value's size, or a number above `limit` as soon as it is known to exceed it. */
export function jsonBytes(value: SizedJson | undefined, limit: number = Number.MAX_SAFE_INTEGER): number {
  let total = 0;
  const stack: (SizedJson | undefined)[] = [value];
  while (stack.length > 0 && total <= limit) {
    const item = stack.pop();
    if (item === undefined || item === null) total += 4;
    else if (typeof item === "string") total += Buffer.byteLength(item, "utf8") + 2;
    else if (typeof item === "number" || typeof item === "bigint") total += String(item).length;
    else if (typeof item === "boolean") total += item ? 4 : 5;
    else if (Array.isArray(item)) {
      total += 2 + Math.max(0, item.length - 1);
      for (const entry of item as readonly SizedJson[]) stack.push(entry);
    } else {
      const entries = Object.entries(item as { readonly [key: string]: SizedJson });
      total += 2 + Math.max(0, entries.length - 1);
      for (const [key, entry] of entries) {
        total += Buffer.byteLength(key, "utf8") + 3;
        stack.push(entry);
      }
    }
  }
  return total;
}
