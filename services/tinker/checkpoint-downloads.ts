// Checkpoint files to download without a key: URLs signed for one file (or the whole archive) of
// a sampler or external-weights checkpoint, valid an hour, and the files they grant. The SDK's CLI
// and 0.34's archive download fetch them as they would cloud storage URLs.
import { ApiError, badRequest } from "../core/errors.js";
import type { Checkpoints } from "../models/index.js";
import type { UrlSigner } from "../store/index.js";
import { type DownloadSource, openCheckpointAdapter, openCheckpointArchive } from "../training/index.js";
import type { TinkerCheckpointRecord, TinkerCheckpoints } from "./tinker-checkpoints.js";

/** How long a signed checkpoint download URL stays valid. */
const DOWNLOAD_URL_TTL_MS = 3_600_000;
/** The file name a signed URL of a checkpoint's whole archive carries. */
const ARCHIVE = "archive.tar";

export class CheckpointDownloads {
  constructor(
    private readonly deps: { tinkerCheckpoints: TinkerCheckpoints; checkpoints: Checkpoints; signer: UrlSigner },
  ) {}

  /** A signed URL per file of the checkpoint, and when they expire. */
  async fileUrls(entity: string, runId: string, checkpointId: string, base: string): Promise<{ urls: Record<string, string>; expires: Date }> {
    const checkpoint = await this.downloadable(entity, runId, checkpointId);
    const model = await this.deps.checkpoints.atStep(checkpoint.training_run_id, checkpoint.model_step ?? -1);
    const names = model ? this.deps.checkpoints.adapterFileNames(model) : [];
    return { urls: Object.fromEntries(names.map((name) => [name, this.signedUrl(base, checkpoint, name)])), expires: new Date(Date.now() + DOWNLOAD_URL_TTL_MS) };
  }

  /** A signed URL of every file of the checkpoint as one tar. */
  async archiveUrl(entity: string, runId: string, checkpointId: string, base: string): Promise<{ url: string; expires: Date }> {
    const checkpoint = await this.downloadable(entity, runId, checkpointId);
    return { url: this.signedUrl(base, checkpoint, ARCHIVE), expires: new Date(Date.now() + DOWNLOAD_URL_TTL_MS) };
  }

  /** The file a signed URL grants (403 for a forged, altered or expired one; 404 once the checkpoint is gone). */
  async open(token: string, filename: string): Promise<DownloadSource> {
    const grant = this.deps.signer.verify(token);
    if (!grant || grant.f !== filename || typeof grant.e !== "string" || typeof grant.r !== "string" || typeof grant.c !== "string") {
      throw new ApiError("permission_denied", "this download URL is invalid or has expired; ask for a new one (get_external_weights_urls)");
    }
    const checkpoint = await this.deps.tinkerCheckpoints.getOwned(grant.e, grant.r, grant.c);
    const model = await this.deps.checkpoints.atStep(checkpoint.training_run_id, checkpoint.model_step ?? -1);
    if (!model) throw badRequest(`tinker://${grant.r}/${grant.c} no longer has its files`);
    const stem = `${checkpoint.training_run_id}-${checkpoint.checkpoint_id}`.replace(/[^A-Za-z0-9._-]/g, "_");
    const noFiles = `tinker://${grant.r}/${grant.c} has no files`;
    if (filename === ARCHIVE) return openCheckpointArchive(this.deps.checkpoints, model, stem, noFiles);
    return { ...(await openCheckpointAdapter(this.deps.checkpoints, model, stem, filename, null, noFiles)), filename };
  }

  /** A checkpoint whose adapter files download: sampler or external weights (training state holds the trainer's own files). */
  private async downloadable(entity: string, runId: string, checkpointId: string): Promise<TinkerCheckpointRecord> {
    const checkpoint = await this.deps.tinkerCheckpoints.getOwned(entity, runId, checkpointId);
    if (checkpoint.model_step === undefined) throw badRequest(`tinker://${runId}/${checkpointId} holds training state (the adapter with its optimizer moments) for load_state; to download an adapter, save_weights_external or save_weights_for_sampler`);
    return checkpoint;
  }

  private signedUrl(base: string, checkpoint: TinkerCheckpointRecord, filename: string): string {
    const token = this.deps.signer.sign({ e: checkpoint.entity, r: checkpoint.training_run_id, c: checkpoint.checkpoint_id, f: filename }, DOWNLOAD_URL_TTL_MS);
    return `${base}/api/v1/checkpoint_files/${token}/${encodeURIComponent(filename)}`;
  }
}
