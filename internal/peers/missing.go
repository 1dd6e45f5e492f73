package peers

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
// when set, else the cached v1.17.5 (DefaultCache), which scripts/test
// installs before the tests and which is installed here first under
// CI=true. Elsewhere a missing geth skips the test.
func GethForTest(tb testing.TB) string {
	tb.Helper()
	if bin := os.Getenv("PRECONF_GETH"); bin != "" {
		return bin
	}
	ci := os.Getenv("CI") == "true"
	bin, err := Geth(DefaultCache(), ci, testLog{tb})
	if err != nil {
		Missing(tb, fmt.Sprintf("%v: install it with `go run ./internal/peers/install geth` (GOBIN=%s go install %s) or set PRECONF_GETH",
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
// replaces go-ethereum with, cached in DefaultCache (built by scripts/test
// before the tests, and here first under CI=true; run from a package
// directory of the repository). Elsewhere a missing op-geth skips the test.
func OpGethForTest(tb testing.TB) string {
	tb.Helper()
	if bin := os.Getenv("PRECONF_OPGETH"); bin != "" {
		return bin
	}
	bin, err := OpGeth(".", DefaultCache(), os.Getenv("CI") == "true", testLog{tb})
	if err != nil {
		Missing(tb, fmt.Sprintf("%v: build it with `go run ./internal/peers/install op-geth` from the repository's root or set PRECONF_OPGETH", err))
	}
	return bin
}

// AnvilForTest returns the anvil a comparison test runs beside the node:
// $PRECONF_ANVIL when set, else the one scripts/setup-clients installs
// (tests/clients/node_modules, the version its package-lock.json pins),
// else the cached npm package (DefaultCache), installed first under
// CI=true. Elsewhere a missing anvil skips the test.
func AnvilForTest(tb testing.TB) string {
	tb.Helper()
	if bin := os.Getenv("PRECONF_ANVIL"); bin != "" {
		return bin
	}
	if root, err := moduleRoot(); err == nil {
		if bin := filepath.Join(root, "tests", "clients", "node_modules", AnvilPackage, "bin", "anvil"); IsExecutable(bin) {
			return bin
		}
	}
	bin, err := Anvil(DefaultCache(), os.Getenv("CI") == "true", testLog{tb})
	if err != nil {
		Missing(tb, fmt.Sprintf("%v: set PRECONF_ANVIL, or install it with `go run ./bench -install anvil`", err))
	}
	return bin
}

// moduleRoot is the directory of the go.mod above the working directory
// (a test runs in its package's directory).
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		up := filepath.Dir(dir)
		if up == dir {
			return "", fmt.Errorf("no go.mod above the working directory")
		}
		dir = up
	}
}
