// Stored responses (`store: true`, OpenAI's default): the response as sent, its input items, and
// the conversation it ends as chat messages, so `previous_response_id` continues it. Only the
// entity that made a response sees it; another's is reported as absent.
import { fromBinary, toBinary, type JsonObject } from "@bufbuild/protobuf";
import type { Binary, Collection, Db } from "mongodb";
import { ResponseSchema, type Response } from "../../../gen/srl/v1/responses_pb.js";
import { notFound } from "../../core/errors.js";

interface StoredResponseRecord {
  _id: string;
  entity: string;
  /** The Response in protobuf's binary encoding (schemas in it may hold keys MongoDB refuses). */
  response: Binary | Uint8Array;
  /** JSON text: this request's input items, and the whole conversation through this response's output. */
  input_items: string;
  conversation: string;
  created_at: Date;
}

export interface StoredResponse {
  response: Response;
  inputItems: JsonObject[];
  /** Chat messages: the earlier responses' turns, this input, this output (instructions are not carried over). */
  conversation: JsonObject[];
}

export class StoredResponses {
  private readonly records: Collection<StoredResponseRecord>;

  constructor(db: Db) {
    this.records = db.collection<StoredResponseRecord>("responses");
  }

  async ensureIndexes(): Promise<void> {
    await this.records.createIndex({ entity: 1, created_at: -1 });
  }

  async save(entity: string, stored: StoredResponse): Promise<void> {
    await this.records.insertOne({
      _id: stored.response.id,
      entity,
      response: toBinary(ResponseSchema, stored.response),
      input_items: JSON.stringify(stored.inputItems),
      conversation: JSON.stringify(stored.conversation),
      created_at: new Date(),
    });
  }

  async getOwned(entity: string, id: string): Promise<StoredResponse> {
    const record = await this.records.findOne({ _id: id, entity });
    if (!record) throw notFound(`Response with id '${id}' not found.`);
    const bytes = record.response instanceof Uint8Array ? record.response : record.response.buffer;
    return {
      response: fromBinary(ResponseSchema, bytes),
      inputItems: JSON.parse(record.input_items) as JsonObject[],
      conversation: JSON.parse(record.conversation) as JsonObject[],
    };
  }

  async deleteOwned(entity: string, id: string): Promise<void> {
    const { deletedCount } = await this.records.deleteOne({ _id: id, entity });
    if (deletedCount === 0) throw notFound(`Response with id '${id}' not found.`);
  }
}
