package main

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// rawPost returns the whole JSON-RPC answer (errors included).
func rawPost(url, body string) (string, error) {
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

func addRequest(name, rpcURL string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"wallet_addEthereumChain","params":[{"chainId":"0x539","chainName":%q,"nativeCurrency":{"name":"Ether","symbol":"ETH","decimals":18},"rpcUrls":[%q]}]}`, name, rpcURL)
}

// pendingID waits until `preconf wallet pending` lists a request for name
// and returns its ID.
func pendingID(t *testing.T, nodeURL, name string) string {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		out, code := run(t, "wallet", "pending", "--rpc", nodeURL)
		if code != 0 {
			t.Fatalf("wallet pending: exit %d: %s", code, out)
		}
		for _, line := range strings.Split(out, "\n") {
			if strings.Contains(line, name) {
				return strings.Fields(line)[0]
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("no pending request for %s", name)
	return ""
}

const (
	rejected4001 = `{"jsonrpc":"2.0","id":1,"error":{"code":4001,"message":"User rejected the request"}}`
	null         = `{"jsonrpc":"2.0","id":1,"result":null}`
)

func TestWalletCommands(t *testing.T) {
	datadir := t.TempDir()
	p := start(t, "--datadir", datadir, "--block-time", "0", "--wallet.approval", "prompt", "--wallet.allow-private") // it probes itself, on loopback

	// approve ID --rpc URL (flag after the ID)
	answer := make(chan string, 1)
	go func() {
		out, err := rawPost(p.url, addRequest("CLI approve", p.url+"/?cli-approve"))
		if err != nil {
			out = err.Error()
		}
		answer <- out
	}()
	id := pendingID(t, p.url, "CLI approve")
	if out, code := run(t, "wallet", "approve", id, "--rpc", p.url); code != 0 || strings.TrimSpace(out) != "approved "+id {
		t.Fatalf("wallet approve: exit %d: %s", code, out)
	}
	if got := <-answer; strings.TrimSpace(got) != null {
		t.Fatalf("approved call answered %s", got)
	}

	// reject --rpc URL ID (flag before the ID)
	go func() {
		out, err := rawPost(p.url, addRequest("CLI reject", p.url+"/?cli-reject"))
		if err != nil {
			out = err.Error()
		}
		answer <- out
	}()
	id = pendingID(t, p.url, "CLI reject")
	if out, code := run(t, "wallet", "reject", "--rpc", p.url, id); code != 0 || strings.TrimSpace(out) != "rejected "+id {
		t.Fatalf("wallet reject: exit %d: %s", code, out)
	}
	if got := <-answer; strings.TrimSpace(got) != rejected4001 {
		t.Fatalf("rejected call answered %s", got)
	}

	// Unknown IDs and bad usage.
	if out, code := run(t, "wallet", "approve", "nope", "--rpc", p.url); code != 1 || !strings.Contains(out, "no pending approval nope") {
		t.Errorf("approve unknown: exit %d: %s", code, out)
	}
	if out, code := run(t, "wallet", "approve", "--rpc", p.url); code != 2 || !strings.Contains(out, "want exactly one request ID") {
		t.Errorf("approve without ID: exit %d: %s", code, out)
	}
	out, code := run(t, "wallet", "chains", "--rpc", p.url)
	if code != 0 || !strings.Contains(out, "/?cli-approve") || strings.Contains(out, "/?cli-reject") || !strings.Contains(out, "CLI approve") {
		t.Fatalf("wallet chains: exit %d: %s", code, out)
	}
	// Switching is remembered too.
	if got, _ := rawPost(p.url, `{"jsonrpc":"2.0","id":1,"method":"wallet_switchEthereumChain","params":[{"chainId":"0x1"}]}`); !strings.Contains(got, `"code":4902`) {
		t.Errorf("switch to unknown: %s", got)
	}
	p.stop(t)

	// Restart in reject mode: the registry survived; everything new is rejected.
	p = start(t, "--datadir", datadir, "--block-time", "0", "--wallet.approval", "reject")
	out, code = run(t, "wallet", "chains", "--rpc", p.url)
	if code != 0 || !strings.Contains(out, "/?cli-approve") || !strings.Contains(out, "CLI approve") {
		t.Fatalf("after restart, wallet chains: exit %d: %s", code, out)
	}
	if got, _ := rawPost(p.url, addRequest("Rejected", p.url+"/?x")); strings.TrimSpace(got) != rejected4001 {
		t.Errorf("reject mode answered %s", got)
	}
	p.stop(t)

	// auto mode approves valid requests by itself.
	p = start(t, "--datadir", datadir, "--block-time", "0", "--wallet.approval", "auto", "--wallet.allow-private")
	if got, _ := rawPost(p.url, addRequest("Auto", p.url+"/?auto")); strings.TrimSpace(got) != null {
		t.Errorf("auto mode answered %s", got)
	}
	p.stop(t)

	// --wallet=false: the methods answer 4100.
	p = start(t, "--datadir", datadir, "--block-time", "0", "--wallet=false")
	for _, body := range []string{addRequest("Off", p.url), `{"jsonrpc":"2.0","id":1,"method":"wallet_switchEthereumChain","params":[{"chainId":"0x539"}]}`} {
		if got, _ := rawPost(p.url, body); strings.TrimSpace(got) != `{"jsonrpc":"2.0","id":1,"error":{"code":4100,"message":"Requested method not supported"}}` {
			t.Errorf("disabled wallet answered %s", got)
		}
	}
	p.stop(t)
}

func TestWalletFlagErrors(t *testing.T) {
	tmp := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--wallet.approval", "maybe"}, "--wallet.approval must be prompt, auto or reject"},
		{[]string{"--wallet.approval-timeout", "-1s"}, "--wallet.approval-timeout must be positive"},
		{[]string{"--wallet.explorer-url", "ftp://x y"}, "--wallet.explorer-url"},
		{[]string{"--wallet.currency-symbol", "TOOLONG"}, "--wallet.currency-symbol must have 1-6 characters"},
		{[]string{"--wallet.rpc-url", "http://node.example"}, "--wallet.rpc-url"},
	} {
		out, code := run(t, append([]string{"--datadir", tmp, "--block-time", "0"}, tc.args...)...)
		if code != 2 || !strings.Contains(out, tc.want) {
			t.Errorf("%v: exit %d, output %s", tc.args, code, out)
		}
	}
}
