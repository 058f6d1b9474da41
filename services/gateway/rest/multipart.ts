// Whether a body is a `multipart/form-data` form (RFC 7578), and its boundary; streamed-upload.ts
// parses such forms as they arrive.
import { badRequest } from "../../core/errors.js";

/** The boundary of a multipart/form-data content type, or null for any other content type. */
export function multipartBoundary(contentType: string | null | undefined): string | null {
  if (!contentType || !/^\s*multipart\/form-data\s*(;|$)/i.test(contentType)) return null;
  const match = /;\s*boundary=(?:"([^"]+)"|([^;\s]+))/i.exec(contentType);
  const boundary = match?.[1] ?? match?.[2];
  if (!boundary) throw badRequest("multipart/form-data without a boundary parameter");
  return boundary;
}
