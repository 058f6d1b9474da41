// Events service: list a job's events (cursor-paginated, oldest first) and watch them live.
import { Events } from "../../gen/srl/v1/events_pb.js";
import { principalOf } from "../gateway/auth/authenticate.js";
import { defineHandlers } from "../gateway/pipeline.js";
import { listEnvelope } from "../store/pagination.js";
import type { TrainingJobs } from "../training/jobs.js";
import type { EventLog } from "./event-log.js";

export function eventsHandlers(deps: { events: EventLog; jobs: TrainingJobs }) {
  return defineHandlers(Events, {
    async listTrainingJobEvents(request, context) {
      const job = await deps.jobs.getOwned(principalOf(context).entity, request.trainingJobId);
      return listEnvelope(await deps.events.list(job._id, { after: request.after, limit: request.limit ?? 20 }));
    },

    async *watchTrainingJobEvents(request, context) {
      const job = await deps.jobs.getOwned(principalOf(context).entity, request.trainingJobId);
      yield* deps.events.watch(job._id, request.after, context.signal);
    },
  });
}
