// Reading the API's lists: every page of a cursor-paginated list (up to a bound), and a map over
// many items with a few requests in flight at once (a browser opens 6 connections per host).

interface ListPage<T> {
  data: T[];
  hasMore: boolean;
  lastId: string;
}

/** Every item of a list, page by page, stopping once `max` are read; `truncated` if more were left. */
export async function listAll<T>(page: (after: string | undefined) => Promise<ListPage<T>>, max = Infinity): Promise<{ items: T[]; truncated: boolean }> {
  const items: T[] = [];
  for (let after: string | undefined; ; ) {
    const list = await page(after);
    items.push(...list.data);
    if (!list.hasMore || !list.lastId || list.lastId === after) return { items, truncated: false };
    if (items.length >= max) return { items, truncated: true };
    after = list.lastId;
  }
}

/** `map` over `items` with at most `width` calls in flight, results in the items' order. */
export async function mapPooled<T, R>(items: readonly T[], width: number, map: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const index = next++;
      results[index] = await map(items[index] as T);
    }
  };
  await Promise.all(Array.from({ length: Math.min(width, items.length) }, worker));
  return results;
}
