//go:build tools

// Package tools pins the S3-compatible server (Versity S3 Gateway, Apache-2.0, serving a POSIX
// directory) the blob-store tests run the S3 blob store against (test/support/s3-server.ts). The
// blank import keeps the requirement alive through `go mod tidy`; build the binary with
// scripts/install-s3-server.sh.
package tools

import (
	_ "github.com/versity/versitygw/cmd/versitygw"
)
