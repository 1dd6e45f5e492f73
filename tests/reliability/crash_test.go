package reliability_test

import (
	"context"
	"crypto/ecdsa"
	"math/big"
	"math/rand"
	"sync"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/params"

	"github.com/preconf/preconf/chain"
)

// streamer sends transfers from one dev account as fast as the node
// acknowledges them; a hash returned by eth_sendRawTransaction is an
// acknowledgement, and must survive any crash.
type streamer struct {
	key   *ecdsa.PrivateKey
	to    common.Address
	nonce uint64
}

func (s *streamer) run(ctx context.Context, p *proc, signer types.Signer, ack func(common.Hash)) {
	for ctx.Err() == nil {
		tx, _ := types.SignNewTx(s.key, signer, &types.DynamicFeeTx{ChainID: big.NewInt(chain.DevChainID), Nonce: s.nonce,
			Gas: 21000, GasFeeCap: big.NewInt(100 * params.GWei), GasTipCap: big.NewInt(1), To: &s.to, Value: big.NewInt(1)})
		raw, _ := tx.MarshalBinary()
		var hash common.Hash
		if err := call(p, &hash, "eth_sendRawTransaction", hexutil.Bytes(raw)); err != nil {
			return // the node died mid-call: not acknowledged
		}
		s.nonce++
		ack(hash)
		time.Sleep(2 * time.Millisecond)
	}
}

// pendingNonce is the account's next nonce once the pool has drained.
func pendingNonce(t *testing.T, p *proc, addr common.Address) uint64 {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; {
		var st map[string]hexutil.Uint
		if call(p, &st, "txpool_status") == nil && st["pending"] == 0 && st["queued"] == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the pool did not drain after a restart")
		}
		time.Sleep(50 * time.Millisecond)
	}
	var n hexutil.Uint64
	if err := call(p, &n, "eth_getTransactionCount", addr, "pending"); err != nil {
		t.Fatal(err)
	}
	return uint64(n)
}

// TestKillNineWhileStreaming kills the node with SIGKILL at random moments
// while transactions stream in, restarts it each time, and checks that
// every acknowledged transaction made it into a block and every block seen
// sealed kept its hash.
func TestKillNineWhileStreaming(t *testing.T) {
	kills := envInt("PRECONF_RELIABILITY_KILLS", 8)
	p := startProc(t, nil, "--datadir", t.TempDir(), "--block-time", "400ms", "--log.level", "warn")
	signer := types.LatestSignerForChainID(big.NewInt(chain.DevChainID))
	var streamers []*streamer
	for i, k := range chain.DevKeys[:4] {
		key, _ := crypto.HexToECDSA(k)
		streamers = append(streamers, &streamer{key: key, to: common.BigToAddress(big.NewInt(int64(0x2000 + i)))})
	}
	var (
		mu     sync.Mutex
		acked  []common.Hash
		sealed = map[uint64]common.Hash{}
	)
	rng := rand.New(rand.NewSource(time.Now().UnixNano()))
	var restarts []time.Duration
	for round := 0; round < kills; round++ {
		for _, s := range streamers {
			s.nonce = pendingNonce(t, p, crypto.PubkeyToAddress(s.key.PublicKey))
		}
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		for _, s := range streamers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				s.run(ctx, p, signer, func(h common.Hash) { mu.Lock(); acked = append(acked, h); mu.Unlock() })
			}()
		}
		for stop := time.Now().Add(time.Duration(300+rng.Intn(1200)) * time.Millisecond); time.Now().Before(stop); {
			var b struct {
				Number hexutil.Uint64 `json:"number"`
				Hash   common.Hash    `json:"hash"`
			}
			if call(p, &b, "eth_getBlockByNumber", "latest", false) == nil {
				mu.Lock()
				sealed[uint64(b.Number)] = b.Hash
				mu.Unlock()
			}
			time.Sleep(time.Duration(10+rng.Intn(60)) * time.Millisecond)
		}
		p.kill9()
		cancel()
		wg.Wait()
		start := time.Now()
		p.start()
		restarts = append(restarts, time.Since(start))
	}
	for _, s := range streamers { // wait until everything re-admitted is sealed
		pendingNonce(t, p, crypto.PubkeyToAddress(s.key.PublicKey))
	}
	time.Sleep(time.Second) // the last flashblocks are sealed within a block time
	lost := 0
	for _, h := range acked {
		var rec *struct {
			BlockNumber hexutil.Uint64 `json:"blockNumber"`
		}
		if err := call(p, &rec, "eth_getTransactionReceipt", h); err != nil || rec == nil {
			lost++
			t.Errorf("acknowledged transaction %s lost (%v)", h, err)
		}
	}
	for num, hash := range sealed {
		var b struct {
			Hash common.Hash `json:"hash"`
		}
		if err := call(p, &b, "eth_getBlockByNumber", hexutil.Uint64(num), false); err != nil || b.Hash != hash {
			t.Errorf("sealed block %d was %s, now %s (%v)", num, hash, b.Hash, err)
		}
	}
	if len(acked) < 100 {
		t.Fatalf("only %d transactions acknowledged: too little traffic to judge", len(acked))
	}
	var total time.Duration
	for _, d := range restarts {
		total += d
	}
	t.Logf("FIGURE kill -9: %d kills survived; %d acknowledged transactions, %d lost; %d sealed blocks kept their hashes; restart to ready %s on average",
		kills, len(acked), lost, len(sealed), (total / time.Duration(len(restarts))).Round(time.Millisecond))
}
