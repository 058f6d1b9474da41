// The generated Connect clients over the browser transport; the API key (kept in session storage,
// never in URLs) goes in the Authorization header.
import { createClient, ConnectError, type Interceptor } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-web";
import { Evaluations } from "../../gen/srl/v1/evaluations_pb.js";
import { Events } from "../../gen/srl/v1/events_pb.js";
import { Inference } from "../../gen/srl/v1/inference_pb.js";
import { ApiKeys } from "../../gen/srl/v1/keys_pb.js";
import { Models } from "../../gen/srl/v1/models_pb.js";
import { Training } from "../../gen/srl/v1/training_pb.js";

const KEY = "srl-api-key";

export const apiKey = {
  get: () => sessionStorage.getItem(KEY),
  set: (key: string) => sessionStorage.setItem(KEY, key),
  clear: () => sessionStorage.removeItem(KEY),
};

const bearer: Interceptor = (next) => (request) => {
  const key = apiKey.get();
  if (key) request.header.set("authorization", `Bearer ${key}`);
  return next(request);
};

const transport = createConnectTransport({ baseUrl: location.origin, interceptors: [bearer] });

export const models = createClient(Models, transport);
export const training = createClient(Training, transport);
export const events = createClient(Events, transport);
export const inference = createClient(Inference, transport);
export const evaluations = createClient(Evaluations, transport);
export const apiKeys = createClient(ApiKeys, transport);

/** A message a person can read, from any error the API gives. */
export function readable(error: unknown): string {
  const connect = ConnectError.from(error);
  return connect.rawMessage || connect.message;
}
