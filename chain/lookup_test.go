package chain

import (
	"math/big"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/rawdb"
	"github.com/ethereum/go-ethereum/core/types"
)

// TestTxLookupNotAboveHead: go-ethereum's SetCanonical writes a block's
// transaction lookup entries and canonical hash before it moves the head.
// In that window (recreated here by writing them for head+1 without moving
// the head) TxLookup must not report the transaction: "latest" does not
// reach its block yet.
func TestTxLookupNotAboveHead(t *testing.T) {
	c, err := Open(Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	head := c.Head()
	tx := types.NewTx(&types.LegacyTx{Nonce: 7, To: &common.Address{1}, Gas: 21000, GasPrice: big.NewInt(1)})
	next := types.NewBlockWithHeader(&types.Header{ParentHash: head.Hash(), Number: new(big.Int).Add(head.Number, common.Big1)}).
		WithBody(types.Body{Transactions: types.Transactions{tx}})
	rawdb.WriteBlock(c.db, next)
	rawdb.WriteCanonicalHash(c.db, next.Hash(), next.NumberU64())
	rawdb.WriteTxLookupEntriesByBlock(c.db, next)
	if rawdb.ReadTxLookupEntry(c.db, tx.Hash()) == nil {
		t.Fatal("lookup entry not written")
	}
	if _, _, n, _, ok := c.TxLookup(tx.Hash()); ok {
		t.Fatalf("transaction of block %d reported with the head at %d", n, head.Number)
	}
}
