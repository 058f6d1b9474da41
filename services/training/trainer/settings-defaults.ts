// The training settings' defaults, read from the contract instead of written here: a field's
// `(srl.v1.field).default_json` (proto/srl/v1/options.proto), else its proto zero value. The
// settings the trainer receives carry theirs on proto/srl/trainer/v1/trainer.proto (RlLoss,
// LoraConfig, OptimizerConfig), where the Python trainer reads them too (srl_trainer/proto.py);
// the settings only this service resolves carry theirs on the public ExperimentalTrainingConfig.
import { fromJson, getOption, hasOption, type DescMessage, type JsonObject, type JsonValue, type MessageShape } from "@bufbuild/protobuf";
import { reflect, scalarZeroValue } from "@bufbuild/protobuf/reflect";
import { field as fieldOption } from "../../../gen/srl/v1/options_pb.js";

/** A message's singular scalar fields, each with its default (never undefined). */
export type SettingDefaults<M> = {
  [K in keyof M as K extends `$${string}` ? never : Exclude<M[K], undefined> extends string | number | bigint | boolean ? K : never]-?: Exclude<M[K], undefined>;
};

/** The defaults of every singular scalar field of `schema`, as the message's own types. */
export function settingDefaults<Desc extends DescMessage>(schema: Desc): SettingDefaults<MessageShape<Desc>> {
  const json: JsonObject = {};
  for (const field of schema.fields) {
    const text = hasOption(field, fieldOption) ? getOption(field, fieldOption).defaultJson : "";
    if (text) json[field.jsonName] = JSON.parse(text) as JsonValue;
  }
  const message = fromJson(schema, json);
  const fields = reflect(schema, message);
  for (const field of fields.fields) {
    if (field.oneof || fields.isSet(field)) continue;
    if (field.fieldKind === "scalar") fields.set(field, scalarZeroValue(field.scalar, field.longAsString));
    else if (field.fieldKind === "enum") fields.set(field, field.enum.values[0]!.number);
  }
  // Every singular scalar field now holds a value, which the message type cannot say.
  return message as unknown as SettingDefaults<MessageShape<Desc>>;
}
