package reliability_test

import (
	"context"
	"math/big"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/preconf/preconf/chain"
)

// TestSoak runs reads at "pending" and 20 transactions a second for a
// bounded time (30 s; PRECONF_RELIABILITY_SOAK seconds to change it),
// sampling the node's RSS: no call may fail, and memory must level off
// (the end may not exceed twice the first sample after warm-up plus 64 MiB;
// the figures are logged for docs/reliability.md).
func TestSoak(t *testing.T) {
	secs := envInt("PRECONF_RELIABILITY_SOAK", 30)
	p := startProc(t, nil, "--datadir", t.TempDir(), "--log.level", "warn")
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(secs)*time.Second)
	defer cancel()
	var reads, sent, failures atomic.Int64
	var firstErr atomic.Value
	fail := func(err error) {
		failures.Add(1)
		firstErr.CompareAndSwap(nil, err.Error())
	}
	var wg sync.WaitGroup
	addrs := chain.DevAccounts()
	for w := 0; w < 4; w++ { // readers, paced so the machine stays usable
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ctx.Err() == nil; i++ {
				var bal hexutil.Big
				var err error
				switch i % 3 {
				case 0:
					err = call(p, &bal, "eth_getBalance", addrs[i%len(addrs)], "pending")
				case 1:
					err = call(p, nil, "eth_getBlockByNumber", "pending", false)
				default:
					err = call(p, nil, "eth_call", map[string]any{"to": addrs[1], "data": "0x"}, "pending")
				}
				if err != nil && ctx.Err() == nil {
					fail(err)
				}
				reads.Add(1)
				time.Sleep(time.Millisecond)
			}
		}()
	}
	wg.Add(1)
	go func() { // 20 transactions a second
		defer wg.Done()
		key, _ := crypto.HexToECDSA(chain.DevKeys[5])
		signer := types.LatestSignerForChainID(big.NewInt(chain.DevChainID))
		to := common.HexToAddress("0x3000")
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for nonce := uint64(0); ; nonce++ {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			tx, _ := types.SignNewTx(key, signer, &types.DynamicFeeTx{ChainID: big.NewInt(chain.DevChainID), Nonce: nonce,
				Gas: 21000, GasFeeCap: big.NewInt(1e11), GasTipCap: big.NewInt(1), To: &to, Value: big.NewInt(1)})
			raw, _ := tx.MarshalBinary()
			if err := call(p, nil, "eth_sendRawTransaction", hexutil.Bytes(raw)); err != nil && ctx.Err() == nil {
				fail(err)
			}
			sent.Add(1)
		}
	}()
	var samples []int
	tick := time.NewTicker(5 * time.Second)
	defer tick.Stop()
	samples = append(samples, p.rssKiB())
sample:
	for {
		select {
		case <-ctx.Done():
			break sample
		case <-tick.C:
			samples = append(samples, p.rssKiB())
		}
	}
	wg.Wait()
	samples = append(samples, p.rssKiB())
	if n := failures.Load(); n > 0 {
		t.Fatalf("%d calls failed during the soak, first: %v", n, firstErr.Load())
	}
	warm := samples[min(1, len(samples)-1)]
	end := samples[len(samples)-1]
	mib := func(kib int) float64 { return float64(kib) / 1024 }
	t.Logf("RSS samples (KiB, every 5 s): %v", samples)
	if end > 2*warm+64<<10 {
		t.Errorf("RSS grew from %.0f MiB (after 5 s) to %.0f MiB", mib(warm), mib(end))
	}
	t.Logf("FIGURE soak: %d s, %d reads and %d transactions, 0 errors; RSS start %.0f MiB, after 5 s %.0f MiB, end %.0f MiB (%s)",
		secs, reads.Load(), sent.Load(), mib(samples[0]), mib(warm), mib(end), goVersion())
}

func goVersion() string {
	out, err := exec.Command("go", "env", "GOVERSION").Output()
	if err != nil {
		return os.Getenv("GOVERSION")
	}
	return strings.TrimSpace(string(out))
}
