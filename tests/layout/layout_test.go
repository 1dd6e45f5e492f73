// Package layout checks the import graph: the layering the README's layout
// table describes holds in the code, not only in the table.
package layout

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/preconf/preconf/"

// TestEngineSpeaksGo: the sequencer is an engine with a Go API; JSON-RPC
// (rpc), go-ethereum's JSON objects (ethjson) and the call and simulation
// methods (simulate) are the handlers' (seqapi, anvil, api), which call it.
// The check is on every package the sequencer depends on, not only its own
// imports.
func TestEngineSpeaksGo(t *testing.T) {
	for _, tt := range []struct {
		pkg       string
		forbidden []string
	}{
		{"sequencer", []string{"rpc", "ethjson", "simulate"}},
	} {
		deps := goListDeps(t, tt.pkg)
		for _, f := range tt.forbidden {
			if slices.Contains(deps, module+f) {
				t.Errorf("%s depends on %s (go list -deps ./%s)", tt.pkg, f, tt.pkg)
			}
		}
	}
}

// goListDeps is go list -deps of the module's package pkg.
func goListDeps(t *testing.T, pkg string) []string {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", module+pkg).Output()
	if err != nil {
		t.Fatalf("go list -deps %s: %v", pkg, err)
	}
	deps := strings.Fields(string(out))
	if !slices.Contains(deps, module+pkg) {
		t.Fatalf("go list -deps %s does not list the package itself: %q", pkg, out)
	}
	return deps
}
