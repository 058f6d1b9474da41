// Cursor pagination shared by every list: `after` is the id of the last item of the previous page,
// exclusive and relative to the order; one extra row tells whether more exist.
import type { Collection, Document, Filter, Sort } from "mongodb";
import { badRequest } from "../core/errors.js";

export interface Page<T> {
  items: T[];
  hasMore: boolean;
}

export async function paginate<T extends Document & { _id: string }>(
  collection: Collection<T>,
  options: { filter: Filter<T>; orderField: keyof T & string; order: "asc" | "desc"; after?: string; limit: number; what: string },
): Promise<Page<T>> {
  const { filter, orderField, order, after, limit } = options;
  let query: Filter<T> = filter;
  if (after) {
    const cursor = await collection.findOne({ ...filter, _id: after } as Filter<T>);
    if (!cursor) throw badRequest(`after: no ${options.what} with id ${after} in this list`);
    query = { ...filter, [orderField]: { [order === "asc" ? "$gt" : "$lt"]: cursor[orderField] } } as Filter<T>;
  }
  const rows = (await collection
    .find(query)
    .sort({ [orderField]: order === "asc" ? 1 : -1 } as Sort)
    .limit(limit + 1)
    .toArray()) as T[];
  return { items: rows.slice(0, limit), hasMore: rows.length > limit };
}

/** The list envelope of every list response. */
export function listEnvelope<T extends { id: string }>(page: { items: T[]; hasMore: boolean }) {
  return {
    object: "list",
    data: page.items,
    hasMore: page.hasMore,
    firstId: page.items[0]?.id ?? "",
    lastId: page.items[page.items.length - 1]?.id ?? "",
  };
}
