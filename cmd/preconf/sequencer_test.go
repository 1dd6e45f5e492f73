package main

import (
	"strings"
	"testing"
)

func TestSequencerFlagErrors(t *testing.T) {
	tmp := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--flashblock-interval", "0"}, "--flashblock-interval 0 needs --block-time 0"},
		{[]string{"--flashblock-interval", "-1s"}, "--flashblock-interval must not be negative"},
		{[]string{"--block-time", "300ms"}, "must be a multiple of --flashblock-interval"},
	} {
		out, code := run(t, append([]string{"--datadir", tmp}, tc.args...)...)
		if code != 2 || !strings.Contains(out, tc.want) {
			t.Errorf("%v: exit %d, output %s", tc.args, code, out)
		}
	}
}

// --no-sequencer (alias --readonly) serves the chain as it is: intake is
// refused and "pending" is "latest". --block-time 0 without it is manual
// mining: a transaction is pooled and sealed by evm_mine.
func TestSequencerModes(t *testing.T) {
	send := `{"jsonrpc":"2.0","id":1,"method":"eth_sendTransaction","params":[{"from":"0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266","to":"0x00000000000000000000000000000000000000cc","value":"0x1"}]}`
	for _, flag := range []string{"--no-sequencer", "--readonly"} {
		p := start(t, "--datadir", t.TempDir(), flag)
		if got := postRaw(t, p.url, send); !strings.Contains(got, "started with --no-sequencer") {
			t.Errorf("%s: eth_sendTransaction answered %s", flag, got)
		}
		pending := post(t, p.url, `{"jsonrpc":"2.0","id":1,"method":"eth_getBlockByNumber","params":["pending",false]}`)
		latest := post(t, p.url, `{"jsonrpc":"2.0","id":1,"method":"eth_getBlockByNumber","params":["latest",false]}`)
		if pending != latest {
			t.Errorf("%s: pending block differs from latest", flag)
		}
		p.stop(t)
	}
	p := start(t, "--datadir", t.TempDir(), "--block-time", "0", "--flashblock-interval", "0")
	defer p.stop(t)
	hash := post(t, p.url, send)
	if n := post(t, p.url, `{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber"}`); n != `"0x0"` {
		t.Fatalf("block %s before evm_mine", n)
	}
	if got := post(t, p.url, `{"jsonrpc":"2.0","id":1,"method":"txpool_status"}`); got != `{"pending":"0x1","queued":"0x0"}` {
		t.Errorf("txpool_status %s", got)
	}
	post(t, p.url, `{"jsonrpc":"2.0","id":1,"method":"evm_mine"}`)
	receipt := post(t, p.url, `{"jsonrpc":"2.0","id":1,"method":"eth_getTransactionReceipt","params":[`+hash+`]}`)
	if !strings.Contains(receipt, `"blockNumber":"0x1"`) || !strings.Contains(receipt, `"status":"0x1"`) {
		t.Errorf("receipt after evm_mine: %s", receipt)
	}
}
