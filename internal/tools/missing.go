package tools

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// Missing is what a test does when a fixture, a peer or a client it needs is
// absent: under CI=true, where the suite must run everything, it fails;
// elsewhere it is skipped, with the reason.
func Missing(tb testing.TB, why string) {
	tb.Helper()
	if os.Getenv("CI") == "true" {
		tb.Fatal(why)
	}
	tb.Skip(why)
}

// GethForTest returns the geth a differential test compares with: $PRECONF_GETH
// when set, else the cached v1.17.5 (DefaultCache), which is installed first
// under CI=true. Elsewhere a missing geth skips the test.
func GethForTest(tb testing.TB) string {
	tb.Helper()
	if bin := os.Getenv("PRECONF_GETH"); bin != "" {
		return bin
	}
	ci := os.Getenv("CI") == "true"
	bin, err := Geth(DefaultCache(), ci, testLog{tb})
	if err != nil {
		Missing(tb, fmt.Sprintf("%v: set PRECONF_GETH, or install it with `GOBIN=%s go install %s`",
			err, filepath.Join(DefaultCache(), "bin"), GethModule))
	}
	return bin
}

type testLog struct{ tb testing.TB }

func (l testLog) Write(p []byte) (int, error) {
	l.tb.Logf("%s", p)
	return len(p), nil
}

// OpGethForTest returns the op-geth a differential test compares with:
// $PRECONF_OPGETH when set, else the one built from the module go.mod
// replaces go-ethereum with, cached in DefaultCache (built first under
// CI=true; run from a package directory of the repository). Elsewhere a
// missing op-geth skips the test.
func OpGethForTest(tb testing.TB) string {
	tb.Helper()
	if bin := os.Getenv("PRECONF_OPGETH"); bin != "" {
		return bin
	}
	bin, err := OpGeth(".", DefaultCache(), os.Getenv("CI") == "true", testLog{tb})
	if err != nil {
		Missing(tb, fmt.Sprintf("%v: set PRECONF_OPGETH, or build it with `go run ./bench -install op-geth`", err))
	}
	return bin
}
