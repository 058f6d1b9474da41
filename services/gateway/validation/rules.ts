// Reads the srl.v1 field and method options once per descriptor and caches them.
import { getOption, hasOption, type DescField, type DescMessage, type DescMethod } from "@bufbuild/protobuf";
import { field as fieldOption, message as messageOption, rest as restOption, sse_events as sseEventsOption, SseEvents, type MessageRules, type RestRules } from "../../../gen/srl/v1/options_pb.js";

export interface FieldRule {
  required: boolean;
  nullable: boolean;
  uuid: boolean;
  ge: bigint | number | undefined;
  le: bigint | number | undefined;
  literal: string[];
  stringOrList: boolean;
  defaultJson: string | undefined;
  /** Most entries of a list or map; undefined: unbounded (the body limit still applies). */
  maxItems: number | undefined;
  /** Most bytes of a string, or of a structured value's JSON (json-size.ts). */
  maxBytes: number | undefined;
  /** On a member of a response oneof answered as the REST body: its HTTP status (0: 200). */
  httpStatus: number;
}

const fieldCache = new WeakMap<DescField, FieldRule>();

export function fieldRule(field: DescField): FieldRule {
  let rule = fieldCache.get(field);
  if (!rule) {
    const opts = hasOption(field, fieldOption) ? getOption(field, fieldOption) : undefined;
    const int64 = isInt64(field);
    rule = {
      required: opts?.required ?? false,
      nullable: opts?.nullable ?? false,
      uuid: opts?.uuid ?? false,
      ge: bound(opts?.ge, int64),
      le: bound(opts?.le, int64),
      literal: opts?.literal ?? [],
      stringOrList: opts?.stringOrList ?? false,
      defaultJson: opts?.defaultJson || undefined,
      maxItems: opts?.maxItems || undefined,
      maxBytes: opts?.maxBytes || undefined,
      httpStatus: opts?.httpStatus ?? 0,
    };
    fieldCache.set(field, rule);
  }
  return rule;
}

export function restRule(method: DescMethod): RestRules | undefined {
  return hasOption(method, restOption) ? getOption(method, restOption) : undefined;
}

export function messageRule(desc: DescMessage): MessageRules | undefined {
  return hasOption(desc, messageOption) ? getOption(desc, messageOption) : undefined;
}

/** Whether a streaming method's REST events are typed (`event:` from each message's `type`, no `[DONE]`). */
export function typedSseEvents(method: DescMethod): boolean {
  return hasOption(method, sseEventsOption) && getOption(method, sseEventsOption) === SseEvents.TYPED;
}

/** The name a field has in REST JSON: the proto name, unless the proto sets json_name explicitly. */
export function restName(field: DescField): string {
  const explicit = field.proto.jsonName;
  return explicit && explicit !== protoCamelCase(field.name) ? explicit : field.name;
}

export function isInt64(field: DescField): boolean {
  return (field.fieldKind === "scalar" || field.fieldKind === "list") && field.scalar !== undefined && is64BitScalar(field.scalar);
}

function is64BitScalar(scalar: number): boolean {
  // ScalarType: INT64=3, UINT64=4, FIXED64=6, SFIXED64=16, SINT64=18
  return scalar === 3 || scalar === 4 || scalar === 6 || scalar === 16 || scalar === 18;
}

function bound(text: string | undefined, int64: boolean): bigint | number | undefined {
  if (!text) return undefined;
  return int64 ? BigInt(text) : Number(text);
}

function protoCamelCase(snake: string): string {
  return snake.replace(/_([a-z0-9])/g, (_m, c: string) => c.toUpperCase());
}
