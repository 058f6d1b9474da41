// The path and query of a request as sent. `new URL(req.url, base)` is not used for this: it
// throws on some targets (`//[`) and reads `//host/path` as another host.

/** Longest request target (path and query) accepted; longer ones are answered 414. */
export const MAX_TARGET_LENGTH = 8192;

export interface RequestTarget {
  /** Still percent-encoded, as sent. */
  pathname: string;
  query: URLSearchParams;
}

/**
 * The target's path and query, or null when it has none: a path (origin-form), or a whole URL
 * (absolute-form, which HTTP/1.1 servers must accept too).
 */
export function requestTarget(url: string | undefined): RequestTarget | null {
  if (url !== undefined && /^https?:\/\//i.test(url)) {
    const parsed = URL.parse(url);
    return parsed ? requestTarget(parsed.pathname + parsed.search) : null;
  }
  if (!url?.startsWith("/")) return null;
  const mark = url.indexOf("?");
  const pathname = mark === -1 ? url : url.slice(0, mark);
  // URLSearchParams never throws: malformed escapes stay as they are.
  return { pathname, query: new URLSearchParams(mark === -1 ? "" : url.slice(mark + 1)) };
}

/** A percent-encoded path segment decoded, or null when its escapes are not valid UTF-8 escapes. */
export function decodeSegment(segment: string): string | null {
  try {
    return decodeURIComponent(segment);
  } catch {
    return null;
  }
}
