package remote_test

import (
	"fmt"
	"math/big"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"

	"github.com/preconf/preconf/chain"
	"github.com/preconf/preconf/node"
	"github.com/preconf/preconf/remote"
)

// What one discovery fetch costs, the upstream (an in-memory preconf on
// loopback, in this process) and the follower's side together: 64 slots of
// a 1,024-slot contract on a fresh State, with proofs (one eth_getProof
// of the 64 keys, verified) and without (64 eth_getStorageAt and the
// account's three reads), one batch request either way. A CPU profile
// splits the two sides (api: the upstream; remote, encoding/json: the
// follower). 2026-11-28, load average 15-17: 8.3-10.1 ms with proofs,
// 1.2-1.6 ms without (three runs); a profile of the proofs case alone:
// the follower's side 59 % of the CPU (encoding/json decoding the answer
// 41 %, verifying it 12 %), the upstream serving the batch 16 % (its
// eth_getProof 8 %, encoding the answer 6 %).
//
//	go test -run '^$' -bench FetchSlots -benchmem -cpuprofile cpu.out ./remote/
func BenchmarkFetchSlots(b *testing.B) {
	g := chain.DevGenesis()
	storage := map[common.Hash]common.Hash{}
	for i := int64(0); i < 1024; i++ {
		storage[common.BigToHash(big.NewInt(i))] = common.BigToHash(big.NewInt(1000 + i))
	}
	g.Alloc[contract] = types.Account{Code: []byte{0x00}, Storage: storage, Balance: new(big.Int), Nonce: 1}
	n, err := node.New(node.Config{Genesis: g, HTTPAddr: "127.0.0.1"})
	if err != nil {
		b.Fatal(err)
	}
	if err := n.Start(nil); err != nil {
		n.Close()
		b.Fatal(err)
	}
	b.Cleanup(func() { n.Close() })
	head := n.Chain.Head()
	keys := make([]common.Hash, 64)
	for i := range keys {
		keys[i] = common.BigToHash(big.NewInt(int64(i * 13 % 1024)))
	}
	for _, mode := range []struct {
		name string
		m    remote.Proofs
	}{{"proofs", remote.ProofsRequired}, {"plain", remote.ProofsOff}} {
		b.Run(fmt.Sprintf("%s/slots=%d", mode.name, len(keys)), func(b *testing.B) {
			sh := remote.NewShared(remote.NewClient(n.URL(), 0), mode.m)
			b.ReportAllocs()
			for b.Loop() {
				st := sh.NewState(head)
				if err := st.PrefetchStorage(map[common.Address][]common.Hash{contract: keys}); err != nil {
					b.Fatal(err)
				}
				if v, err := st.Storage(contract, keys[1]); err != nil || v == (common.Hash{}) {
					b.Fatalf("slot: %s %v", v, err)
				}
			}
		})
	}
}
