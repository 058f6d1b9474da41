// The blob suite on an S3-compatible store: a real S3 server (Versity S3 Gateway, built by the
// install step) started for this file, the service given BLOB_STORE_URL and credentials for it.
import { ListMultipartUploadsCommand, ListObjectsV2Command, S3Client } from "@aws-sdk/client-s3";
import { S3BlobStore, s3OptionsFromUrl } from "../../services/store/blob-store/s3-blob-store.js";
import { startS3Server } from "../support/s3-server.js";
import { describeBlobStore } from "./blob-suite.js";

describeBlobStore("S3-compatible server", async () => {
  const server = await startS3Server();
  const options = s3OptionsFromUrl(server.url);
  const client = new S3Client({ endpoint: server.endpoint, region: options.region, forcePathStyle: true, credentials: server.credentials });
  return {
    env: server.env,
    open: () => new S3BlobStore({ ...options, credentials: server.credentials }),
    // Temporary objects and unfinished multipart uploads under the prefix's tmp/.
    leftovers: async () => {
      const prefix = `${options.prefix ? `${options.prefix}/` : ""}tmp/`;
      const objects = await client.send(new ListObjectsV2Command({ Bucket: server.bucket, Prefix: prefix }));
      const uploads = await client.send(new ListMultipartUploadsCommand({ Bucket: server.bucket, Prefix: prefix }));
      return (objects.KeyCount ?? 0) + (uploads.Uploads?.length ?? 0);
    },
    stop: async () => {
      client.destroy();
      await server.stop();
    },
  };
});
