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
  options: {
    filter: Filter<T>;
    orderField: keyof T & string;
    /** Unique within the filter (a step, a sequence number): no id tie-break needed, the index sorts alone. */
    orderIsUnique?: boolean;
    order: "asc" | "desc";
    after?: string;
    limit: number;
    what: string;
  },
): Promise<Page<T>> {
  const { filter, orderField, order, after, limit } = options;
  const unique = options.orderIsUnique ?? false;
  let query: Filter<T> = filter;
  if (after) {
    const cursor = await collection.findOne({ ...filter, _id: after } as Filter<T>);
    if (!cursor) throw badRequest(`after: no ${options.what} with id ${after} in this list`);
    // Rows sort by the order field, then by id, so rows sharing a value (two models created in
    // the same millisecond) are neither skipped nor repeated across pages.
    const beyond = order === "asc" ? "$gt" : "$lt";
    const past = { [orderField]: { [beyond]: cursor[orderField] } };
    query = (unique ? { ...filter, ...past } : { $and: [filter, { $or: [past, { [orderField]: cursor[orderField], _id: { [beyond]: after } }] }] }) as Filter<T>;
  }
  const direction = order === "asc" ? 1 : -1;
  const rows = (await collection
    .find(query)
    .sort((unique ? { [orderField]: direction } : { [orderField]: direction, _id: direction }) as Sort)
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
