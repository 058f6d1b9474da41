// Events service: list a job's events (cursor-paginated, oldest first) and watch them live.
import { Events } from "../../gen/srl/v1/events_pb.js";
import { defineHandlers, principalOf } from "../core/rpc/index.js";
import { listEnvelope } from "../store/index.js";
import type { EventLog } from "./event-log.js";

/**
 * The id of a training job of `entity`, or a not-found error (also for another entity's job). Jobs
 * are stored above the event log (services/jobs), so the composition root hands this check in.
 */
export type OwnedJobId = (entity: string, trainingJobId: string) => Promise<string>;

export function eventsHandlers(deps: { events: EventLog; ownedJobId: OwnedJobId }) {
  return defineHandlers(Events, {
    async listTrainingJobEvents(request, context) {
      const jobId = await deps.ownedJobId(principalOf(context).entity, request.trainingJobId);
      return listEnvelope(await deps.events.list(jobId, { after: request.after, limit: request.limit ?? 20 }));
    },

    async *watchTrainingJobEvents(request, context) {
      const jobId = await deps.ownedJobId(principalOf(context).entity, request.trainingJobId);
      yield* deps.events.watch(jobId, request.after, context.signal);
    },
  });
}
