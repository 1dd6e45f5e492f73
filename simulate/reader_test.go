package simulate

import (
	"reflect"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/holiman/uint256"
)

// copyAccount must equal StateAccount.Copy and share nothing with the
// original.
func TestCopyAccount(t *testing.T) {
	for _, a := range []*types.StateAccount{
		{Nonce: 7, Balance: uint256.NewInt(1e18), Root: common.HexToHash("0x01"), CodeHash: types.EmptyCodeHash.Bytes()},
		{Balance: nil, CodeHash: nil},
		{Balance: new(uint256.Int), CodeHash: []byte{}},
		{Balance: uint256.NewInt(5), CodeHash: []byte{1, 2, 3}},
	} {
		c := copyAccount(a)
		if !reflect.DeepEqual(c, a.Copy()) {
			t.Errorf("copyAccount(%+v) = %+v, want %+v", a, c, a.Copy())
		}
		if c.Balance != nil {
			c.Balance.AddUint64(c.Balance, 1)
			if c.Balance.Eq(a.Balance) {
				t.Errorf("balance shared with the original")
			}
		}
		if len(c.CodeHash) > 0 {
			c.CodeHash[0]++
			if c.CodeHash[0] == a.CodeHash[0] {
				t.Errorf("code hash shared with the original")
			}
		}
	}
}
