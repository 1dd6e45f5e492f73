package fork_test

import (
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
)

// TestForkCheats: the anvil methods on a fork — a slot of the upstream's
// contract set by anvil_setStorageAt reads back at pending (through the
// contract's own getter too), a snapshot taken before it and reverted to
// after blocks were sealed brings back the upstream's value and the head,
// and anvil_reset forks again at the fork block; the upstream is untouched
// throughout.
func TestForkCheats(t *testing.T) {
	up := upstreamNode(t)
	n, err := forkNode(t, t.TempDir(), up.URL(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	url := n.URL()
	var forkBlock hexutil.Uint64
	if err := call(url, &forkBlock, "eth_blockNumber"); err != nil {
		t.Fatal(err)
	}
	if v := word(t, url, "eth_call", boxCall(selValue, "pending")...); v != 42 {
		t.Fatalf("forked value %d", v)
	}
	var snap hexutil.Uint64
	if err := call(url, &snap, "evm_snapshot"); err != nil {
		t.Fatal(err)
	}
	if err := call(url, nil, "anvil_setStorageAt", box, "0x0", common.BigToHash(common.Big3)); err != nil {
		t.Fatal(err)
	}
	who := common.HexToAddress("0xf00d")
	if err := call(url, nil, "anvil_setBalance", who, "0x64"); err != nil {
		t.Fatal(err)
	}
	if v := word(t, url, "eth_call", boxCall(selValue, "pending")...); v != 3 {
		t.Fatalf("value after anvil_setStorageAt: %d", v)
	}
	if err := call(url, nil, "anvil_mine", "0x2"); err != nil {
		t.Fatal(err)
	}
	if v := word(t, url, "eth_call", boxCall(selValue, "latest")...); v != 3 {
		t.Fatalf("sealed value %d", v)
	}
	var ok bool
	if err := call(url, &ok, "evm_revert", snap); err != nil || !ok {
		t.Fatalf("evm_revert: %v %v", ok, err)
	}
	if v := word(t, url, "eth_call", boxCall(selValue, "pending")...); v != 42 {
		t.Fatalf("value after revert: %d", v)
	}
	var bal hexutil.Big
	if err := call(url, &bal, "eth_getBalance", who, "pending"); err != nil || bal.ToInt().Sign() != 0 {
		t.Fatalf("balance after revert: %v %v", &bal, err)
	}
	// Cheat again, let blocks go by, then reset: back at the fork block.
	if err := call(url, nil, "anvil_setStorageAt", box, "0x0", common.BigToHash(common.Big2)); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		var head hexutil.Uint64
		call(url, &head, "eth_blockNumber")
		if head >= forkBlock+2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no local blocks sealed")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := call(url, nil, "anvil_reset"); err != nil {
		t.Fatal(err)
	}
	var head hexutil.Uint64
	if err := call(url, &head, "eth_blockNumber"); err != nil || head > forkBlock+1 {
		t.Fatalf("head after reset %d (fork block %d): %v", head, forkBlock, err)
	}
	if v := word(t, url, "eth_call", boxCall(selValue, "pending")...); v != 42 {
		t.Fatalf("value after reset: %d", v)
	}
	if v := word(t, up.URL(), "eth_call", boxCall(selValue, "latest")...); v != 42 {
		t.Fatalf("the upstream's value changed: %d", v)
	}
	if err := call(url, nil, "anvil_reset", map[string]any{"forking": map[string]any{"jsonRpcUrl": up.URL()}}); err != nil {
		t.Fatalf("reset with forking parameters: %v", err)
	}
	if v := word(t, url, "eth_call", boxCall(selValue, "pending")...); v != 42 {
		t.Fatalf("value after re-fork at the head: %d", v)
	}
}
