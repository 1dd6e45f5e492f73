package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/crypto"

	"github.com/preconf/preconf/chain"
)

// castBin is foundry's cast as scripts/setup-clients installs it (npm,
// under tests/clients). Without it the test is skipped, or fails under
// CI=true.
func castBin(t *testing.T) string {
	t.Helper()
	bin := filepath.Join("..", "..", "tests", "clients", "node_modules", "@foundry-rs", "cast-linux-amd64", "bin", "cast")
	if _, err := os.Stat(bin); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("cast missing at %s (scripts/setup-clients installs it): %v", bin, err)
		}
		t.Skipf("cast not installed at %s (run scripts/setup-clients)", bin)
	}
	abs, err := filepath.Abs(bin)
	if err != nil {
		t.Fatal(err)
	}
	return abs
}

// castRun runs cast with args and returns its combined output and error.
func castRun(t *testing.T, bin string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, args...).CombinedOutput()
	return string(out), err
}

// TestCastSendTwice: cast 1.7 reads the nonce at "latest", which is sealed
// state, so a second `cast send` right after the first (pre-confirmed, not
// sealed) reuses its nonce. The node's error says so: it keeps go-ethereum's
// "nonce too low" start, names the pending nonce and says to read nonces at
// "pending"; with that nonce the send goes through.
func TestCastSendTwice(t *testing.T) {
	cast := castBin(t)
	p := start(t, "--datadir", t.TempDir(), "--block-time", "0") // manual mining: nothing gets sealed
	defer p.stop(t)
	key := chain.DevKeys[9]
	priv, err := crypto.HexToECDSA(key)
	if err != nil {
		t.Fatal(err)
	}
	from := crypto.PubkeyToAddress(priv.PublicKey).Hex()
	send := func(extra ...string) (string, error) {
		args := append([]string{"send", "--rpc-url", p.url, "--private-key", "0x" + key, "0x00000000000000000000000000000000000000cb", "--value", "1"}, extra...)
		return castRun(t, cast, args...)
	}
	if out, err := send(); err != nil || !strings.Contains(out, "status") {
		t.Fatalf("first cast send: %v\n%s", err, out)
	}
	out, err := send()
	if err == nil {
		t.Fatalf("the second cast send went through; was a block sealed?\n%s", out)
	}
	nonce, err := castRun(t, cast, "nonce", "--rpc-url", p.url, "--block", "pending", from)
	if err != nil {
		t.Fatalf("cast nonce: %v\n%s", err, nonce)
	}
	nonce = strings.TrimSpace(nonce)
	if nonce != "1" {
		t.Fatalf("cast nonce --block pending = %q, want 1", nonce)
	}
	if !strings.Contains(out, "nonce too low: next nonce 1, tx nonce 0") || !strings.Contains(out, `"pending"`) ||
		!regexp.MustCompile(`"pending"\) = `+nonce+`\b`).MatchString(out) {
		t.Fatalf("the second cast send's error does not name the pending nonce %s and the \"pending\" tag:\n%s", nonce, out)
	}
	if out, err := send("--nonce", nonce); err != nil || !strings.Contains(out, "status") {
		t.Fatalf("cast send --nonce %s: %v\n%s", nonce, err, out)
	}
}
