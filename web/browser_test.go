package web_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/preconf/preconf/internal/peers"
	"github.com/preconf/preconf/node"
	"github.com/preconf/preconf/sequencer"
	"github.com/preconf/preconf/wallet"
)

// TestBrowser runs tests/browser (node --test, playwright-core driving
// headless Debian chromium) against a node started here with
// --wallet.approval=prompt on loopback (with --wallet.allow-private: the page adds this node). Outside CI it is skipped when the
// tooling is missing (scripts/setup-wallet installs it); with CI=true
// missing tooling is a failure (peers.Missing).
func TestBrowser(t *testing.T) {
	dir, err := filepath.Abs(filepath.Join("..", "tests", "browser"))
	if err != nil {
		t.Fatal(err)
	}
	chromium := os.Getenv("PRECONF_CHROMIUM")
	if chromium == "" {
		chromium = "/usr/bin/chromium"
	}
	var missing []string
	nodeBin, err := peers.Node(filepath.Dir(filepath.Dir(dir)))
	if err != nil {
		missing = append(missing, err.Error())
	}
	if _, err := os.Stat(chromium); err != nil {
		missing = append(missing, chromium+" (Debian chromium)")
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "playwright-core", "package.json")); err != nil {
		missing = append(missing, "playwright-core in tests/browser (npm ci)")
	}
	if len(missing) > 0 {
		peers.Missing(t, fmt.Sprintf("browser test tooling missing: %v; run scripts/setup-wallet", missing))
	}

	n, err := node.New(node.Config{
		DataDir:  t.TempDir(),
		HTTPAddr: "127.0.0.1",
		// A sequencer, so the /flashblocks feed has something to show.
		Sequencer: &sequencer.Config{BlockTime: time.Second},
		Wallet:    wallet.Config{Approval: wallet.ModePrompt, ApprovalTimeout: 2 * time.Minute, AllowPrivate: true}, // the page adds this node itself
		Logger:    slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	if err := n.Start(nil); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, nodeBin, "--test", "--test-reporter=spec")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PRECONF_URL="+n.URL(), "PRECONF_CHROMIUM="+chromium)
	out, err := cmd.CombinedOutput()
	t.Logf("node --test tests/browser:\n%s", out)
	if err != nil {
		t.Fatalf("browser tests failed: %v", err)
	}
}
