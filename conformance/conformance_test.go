package conformance_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/crypto/kzg4844"

	"github.com/preconf/preconf/chain"
	"github.com/preconf/preconf/conformance"
	"github.com/preconf/preconf/node"
	"github.com/preconf/preconf/sequencer"
	"github.com/preconf/preconf/simulate"
)

// categories are the fixture folders this node must pass, method by method.
var categories = []string{
	"eth_blockNumber",
	"eth_getBalance",
	"eth_getCode",
	"eth_getStorageAt",
	"eth_getStorageValues",
	"eth_getTransactionCount",
	"eth_syncing",
	"eth_blobBaseFee",
	"eth_baseFee",
	"eth_config",
	"eth_getBlockByNumber",
	"eth_getBlockReceipts",
	"eth_getBlockTransactionCountByHash",
	"eth_getBlockTransactionCountByNumber",
	"eth_getLogs",
	"eth_getProof",
	"eth_getTransactionByBlockHashAndIndex",
	"eth_getTransactionByHash",
	"eth_getTransactionReceipt",
	"debug_getRawBlock",
	"debug_getRawHeader",
	"debug_getRawReceipts",
	"debug_getRawTransaction",
	"debug_traceBlockByHash",
	"debug_traceBlockByNumber",
	"debug_traceTransaction",
	// simulate/: run with --simulate.state-root=compute (see startNode).
	"eth_call",
	"eth_createAccessList",
	"eth_estimateGas",
	"eth_simulateV1",
	"eth_capabilities",
	// The transaction fixtures, in this order (rpc-compat's, by name): sends
	// fill the pool that testing_buildBlockV1 and txpool_* read.
	"eth_sendRawTransaction",
	"testing_buildBlockV1",
	"txpool_content",
	"txpool_status",
}

// shapeOnly are the categories whose "speconly" fixtures are compared by
// shape (as rpc-compat does): their recorded values describe the recording
// node, not this one (eth_capabilities: go-ethereum's log-index window;
// testing_buildBlockV1 from the mempool: go-ethereum's miner leaves out
// transactions tipping under 1 mwei, preconf takes every executable one;
// txpool_content: preconf lists the pooled blob transaction, go-ethereum's
// blob pool does not). The other speconly fixtures this node answers
// exactly, and are compared so.
var shapeOnly = map[string]bool{"eth_capabilities": true, "testing_buildBlockV1": true, "txpool_content": true}

// fixtureDir finds the fixtures; under CI=true their absence fails the test.
func fixtureDir(t testing.TB) string {
	t.Helper()
	return conformance.Fixtures(t)
}

// startNode runs a node on the execution-apis test chain, in memory, as the
// README's recipe does: manual mining without flashblocks (transactions are
// pooled, nothing is sealed), go-ethereum's default gas ceiling (60M) for the
// recorded testing_buildBlockV1 block.
func startNode(t testing.TB, dir string) *node.Node {
	t.Helper()
	g, err := chain.LoadGenesis(filepath.Join(dir, "genesis.json"))
	if err != nil {
		t.Fatal(err)
	}
	// Simulated blocks carry real state roots, as the eth_simulateV1
	// fixtures (recorded from go-ethereum) expect.
	sim := simulate.DefaultOptions()
	sim.Roots = simulate.RootCompute
	n, err := node.New(node.Config{Genesis: g, Imports: []string{filepath.Join(dir, "chain.rlp")}, Simulate: &sim,
		Sequencer: &sequencer.Config{Mining: sequencer.ManualMining, Interval: sequencer.NoFlashblocks, GasCeil: 60_000_000}})
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Start(nil); err != nil {
		n.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	return n
}

func TestConformance(t *testing.T) {
	dir := fixtureDir(t)
	cases, err := conformance.Load(dir, categories)
	if err != nil {
		t.Fatal(err)
	}
	// The first blob transaction's proof check builds go-eth-kzg's tables
	// (one sync.Once per process): measured on this 2-core machine at a
	// load average of 18, 20 s plain and 104 s under -race, past the
	// client's 60 s and failing send-blob-tx.io, a fixture about the
	// answer. Built while the node imports its chain instead, and waited
	// for before a fixture with a blob.
	kzgReady := make(chan struct{})
	go func() {
		defer close(kzgReady)
		kzg4844.BlobToCommitment(new(kzg4844.Blob))
	}()
	n := startNode(t, dir)
	client := conformance.NewClient()
	seeded, err := conformance.SeedPool(client, n.URL(), dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("seedpool: %d recorded pool transaction(s) no fixture sends", seeded)
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			if strings.Contains(c.Name, "blob") {
				<-kzgReady
			}
			cmp := conformance.Compare
			if c.SpecOnly && shapeOnly[strings.Split(c.Name, "/")[0]] {
				cmp = conformance.Shape
			}
			if d := conformance.RunWith(client, n.URL(), c, cmp); d != "" {
				t.Errorf("%s", d)
			}
		})
	}
}
