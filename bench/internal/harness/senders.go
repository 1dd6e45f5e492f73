package harness

import (
	"crypto/ecdsa"
	"encoding/json"
	"fmt"
	"math/big"
	"strings"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/preconf/preconf/bench/internal/load"
	"github.com/preconf/preconf/chain"
)

// Senders signs transfers for the ten dev accounts with local nonces.
type Senders struct {
	keys   []*signerKey
	signer types.Signer
	chain  *big.Int
}

type signerKey struct {
	key   *ecdsa.PrivateKey
	from  common.Address
	nonce uint64
}

func NewSenders(addr string) (*Senders, error) {
	s := &Senders{chain: big.NewInt(chain.DevChainID)}
	s.signer = types.LatestSignerForChainID(s.chain)
	for _, hexKey := range chain.DevKeys {
		k, err := crypto.HexToECDSA(hexKey)
		if err != nil {
			return nil, err
		}
		from := crypto.PubkeyToAddress(k.PublicKey)
		raw, err := RPCCall(addr, "eth_getTransactionCount", from, "pending")
		if err != nil {
			return nil, err
		}
		var nonce hexutil.Uint64
		if err := json.Unmarshal(raw, &nonce); err != nil {
			return nil, err
		}
		s.keys = append(s.keys, &signerKey{key: k, from: from, nonce: uint64(nonce)})
	}
	return s, nil
}

var Sink = common.HexToAddress("0x000000000000000000000000000000000000b0b0")

// Next signs sender i's next transfer as an eth_sendRawTransaction request.
func (s *Senders) Next(i int, addr string) (common.Hash, []byte, error) {
	k := s.keys[i]
	tx, err := types.SignNewTx(k.key, s.signer, &types.DynamicFeeTx{
		ChainID: s.chain, Nonce: k.nonce, GasTipCap: big.NewInt(1e9), GasFeeCap: big.NewInt(200e9),
		Gas: 21000, To: &Sink, Value: big.NewInt(1),
	})
	if err != nil {
		return common.Hash{}, nil, err
	}
	k.nonce++
	raw, _ := tx.MarshalBinary()
	return tx.Hash(), load.HTTPRequest(addr, load.Encode(load.NewCall(1, "eth_sendRawTransaction", hexutil.Encode(raw)))), nil
}

func SendOK(c *load.Client, req []byte) error {
	body, err := c.Do(req)
	if err != nil {
		return err
	}
	if !strings.Contains(string(body), `"result"`) {
		return fmt.Errorf("eth_sendRawTransaction: %.200s", body)
	}
	return nil
}

func CmpErr(first, err error) error {
	if first != nil {
		return first
	}
	return err
}

// Len is the number of senders.
func (s *Senders) Len() int { return len(s.keys) }
