//go:build tools

// Package tools pins the FerretDB server binary used by the embedded store
// launcher (services/store/launcher.ts). The blank import keeps the
// requirement alive through `go mod tidy`; build the binary with
// scripts/install-ferretdb.sh.
package tools

import (
	_ "github.com/FerretDB/FerretDB/cmd/ferretdb"
)
