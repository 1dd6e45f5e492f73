package clients_test

import (
	"testing"
)

// TestWalletAddLocalChains adds the node's own chain and an anvil, both on
// loopback, with viem's addChain (wallet.test.mjs) to a node that listens
// on loopback only with --wallet.approval=auto and no other wallet flag:
// loopback RPC URLs are probed by default there.
func TestWalletAddLocalChains(t *testing.T) {
	needNode(t)
	anvil := startAnvil(t)
	n, err := startPreconf("--wallet.approval", "auto")
	if err != nil {
		t.Fatal(err)
	}
	defer n.stop()
	t.Setenv("PRECONF_ANVIL_URL", anvil)
	t.Setenv("PRECONF_ANVIL_CHAIN_ID", "31337") // anvil's default
	nodeTests(t, n, []string{"wallet.test.mjs"}, nil)
}
