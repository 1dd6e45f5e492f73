package harness

import (
	"crypto/ecdsa"
	"errors"
	"math/big"
	"runtime"
	"strconv"
	"sync"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/preconf/preconf/bench/internal/load"
	"github.com/preconf/preconf/chain"
)

// Signers are funded accounts of a write load (put in the genesis by the
// experiment), with local nonces: transaction k of a load is sender k%K's
// next, so each sender's nonces are consecutive in k.
type Signers struct {
	Keys   []*ecdsa.PrivateKey
	Addrs  []common.Address
	Nonces []uint64
	signer types.Signer
}

// NewSigners derives n keys from label (the same every run).
func NewSigners(label string, n int) *Signers {
	s := &Signers{signer: types.LatestSignerForChainID(big.NewInt(chain.DevChainID)), Nonces: make([]uint64, n)}
	for i := range n {
		k, err := crypto.ToECDSA(crypto.Keccak256([]byte(label + " " + strconv.Itoa(i))))
		if err != nil {
			panic(err) // a keccak output is a valid key with overwhelming probability
		}
		s.Keys = append(s.Keys, k)
		s.Addrs = append(s.Addrs, crypto.PubkeyToAddress(k.PublicKey))
	}
	return s
}

// Transfer is a 1-wei transfer to Sink: a template for Sign.
func Transfer(int) types.DynamicFeeTx {
	return types.DynamicFeeTx{Gas: 21000, To: &Sink, Value: big.NewInt(1)}
}

// Sign signs total transactions made by tx(k) — chain id, nonce and fees
// filled in here — as eth_sendRawTransaction requests to addr, and
// advances the nonces. It uses every core.
func (s *Signers) Sign(addr string, total int, tx func(k int) types.DynamicFeeTx) ([][]byte, error) {
	K := len(s.Keys)
	out := make([][]byte, total)
	workers := runtime.NumCPU()
	var wg sync.WaitGroup
	errs := make([]error, workers)
	chainID := big.NewInt(chain.DevChainID)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := w; k < total; k += workers {
				a := k % K
				t := tx(k)
				t.ChainID, t.Nonce, t.GasTipCap, t.GasFeeCap = chainID, s.Nonces[a]+uint64(k/K), big.NewInt(1e9), big.NewInt(200e9)
				signed, err := types.SignNewTx(s.Keys[a], s.signer, &t)
				if err != nil {
					errs[w] = err
					return
				}
				raw, _ := signed.MarshalBinary()
				out[k] = load.HTTPRequest(addr, load.Encode(load.NewCall(1, "eth_sendRawTransaction", hexutil.Encode(raw))))
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	for a := range s.Nonces {
		s.Nonces[a] += uint64(total / K)
		if a < total%K {
			s.Nonces[a]++
		}
	}
	return out, nil
}
