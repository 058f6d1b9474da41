// Engine and queue state for the operator: the database, each engine replica, each base model's
// load (requests running and waiting, KV cache use, contexts, loaded adapters, sequences) and each
// entity's share (requests, training jobs). The numbers /metrics exposes; refreshed while shown.
// Only keys of the operator entity (BOOTSTRAP_ENTITY) may read them: others get an explanation.
import { Code, ConnectError } from "@connectrpc/connect";
import type { OperatorState } from "../../../gen/srl/v1/system_pb.js";
import { operatorTables } from "../admin/operator-tables.js";
import { models } from "../api.js";
import { h } from "../dom.js";
import { keepLoaded, type ViewContext } from "../view.js";
import "../admin/admin.css";
import "./views.css";

const REFRESH_MS = 3000;

export async function operatorView(context: ViewContext): Promise<HTMLElement> {
  const body = h("div", {}, h("p", { class: "muted" }, "Loading…"));
  const page = h("div", { class: "run-view op-page" }, h("section", {}, h("h1", {}, "Operator"), h("p", { class: "muted" }, "Engines and queues of this deployment, refreshed every few seconds."), body));
  let denied = false;
  await keepLoaded(context, REFRESH_MS, async () => {
    // Refused once, refused every time: no point asking again (each refusal is a logged 403).
    if (denied) return;
    let state: OperatorState;
    try {
      state = await models.getOperatorState({}, { signal: context.signal });
    } catch (error) {
      if (ConnectError.from(error).code !== Code.PermissionDenied) throw error;
      denied = true;
      body.replaceChildren(await deniedExplanation(context.signal));
      return;
    }
    if (!context.signal.aborted) body.replaceChildren(...operatorTables(state));
  });
  return page;
}

async function deniedExplanation(signal: AbortSignal): Promise<HTMLElement> {
  let entity = "";
  try {
    entity = (await models.getCurrentEntity({}, { signal })).entity;
  } catch {
    // The explanation stands without the name.
  }
  return h(
    "div",
    { class: "op-denied", role: "note", "data-denied": "" },
    h("h2", {}, "Only the operator sees this page"),
    h("p", {}, "Engine and queue state names every entity's load, so only keys of the operator entity can read it: the entity the server's ", h("code", {}, "BOOTSTRAP_ENTITY"), " names (", h("code", {}, "local"), " unless set)."),
    h("p", {}, entity ? h("span", {}, "You are signed in as ", h("strong", {}, entity), ", a tenant entity. ") : "", "Sign in with an operator key to see it: the key an embedded server prints on its first start is one; an operator can make more with ", h("code", {}, "npm run keys -- create --entity <BOOTSTRAP_ENTITY>"), "."),
  );
}
