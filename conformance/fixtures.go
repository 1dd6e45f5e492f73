package conformance

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/preconf/preconf/internal/peers"
)

// Fixtures returns the fixture directory for a test that reads it. A missing
// directory (no chain.rlp) fails the test under CI=true and skips it
// elsewhere (peers.Missing).
func Fixtures(tb testing.TB) string {
	tb.Helper()
	dir := Dir()
	if _, err := os.Stat(filepath.Join(dir, "chain.rlp")); err != nil {
		peers.Missing(tb, "execution-apis fixtures not found (set "+EnvDir+"): "+err.Error())
	}
	return dir
}
