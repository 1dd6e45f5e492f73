package fork

import (
	"encoding/binary"
	"fmt"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/rawdb"
	"github.com/ethereum/go-ethereum/ethdb"
)

// SetHead rewinds the chain to local block n (at least the fork block):
// the blocks above it stop being canonical and their state changes are
// deleted, so reads at the head see block n's state again — what
// evm_revert needs of the chain. Like InsertSealed it is the sequencer
// goroutine's: the open block (built on the old head) must be dropped and
// the next one opened on the new head.
func (c *Chain) SetHead(n uint64) error {
	g := c.gen.Load()
	head := c.head.Load()
	fork := g.point.Number.Uint64()
	if n < fork || n > head.Number.Uint64() {
		return fmt.Errorf("set head to %d: outside the local blocks %d…%d", n, fork, head.Number)
	}
	target := c.HeaderByNumber(n)
	if target == nil {
		return fmt.Errorf("set head to %d: no such block", n)
	}
	batch := c.db.NewBatch()
	for k := n + 1; k <= head.Number.Uint64(); k++ {
		hash := rawdb.ReadCanonicalHash(c.db, k)
		if b := rawdb.ReadBlock(c.db, hash, k); b != nil {
			for _, tx := range b.Transactions() {
				rawdb.DeleteTxLookupEntry(batch, tx.Hash())
			}
			root := b.Root()
			if v, err := c.db.Get(key(rootPrefix, root[:])); err == nil && len(v) == 8 && decodeNumber(v) > n {
				batch.Delete(key(rootPrefix, root[:]))
			}
		}
		rawdb.DeleteCanonicalHash(batch, k)
	}
	for _, prefix := range [][]byte{accountPrefix, slotPrefix, wipePrefix} {
		if err := deleteAbove(c.db, batch, prefix, n); err != nil {
			return fmt.Errorf("set head to %d: %w", n, err)
		}
	}
	rawdb.WriteHeadHeaderHash(batch, target.Hash())
	rawdb.WriteHeadBlockHash(batch, target.Hash())
	if err := batch.Write(); err != nil {
		return fmt.Errorf("set head to %d: %w", n, err)
	}
	c.headers.Purge()
	c.blocks.Purge()
	c.receipts.Purge()
	c.head.Store(target)
	if s := c.safe.Load(); s != nil && s.Number.Uint64() > n {
		c.safe.Store(target)
	}
	if f := c.finalized.Load(); f != nil && f.Number.Uint64() > n {
		c.SetFinalized(target)
	}
	return c.sync()
}

// deleteAbove deletes the history entries under prefix of blocks above n
// (the block number is the key's last 8 bytes, inverted).
func deleteAbove(db ethdb.Iteratee, batch ethdb.KeyValueWriter, prefix []byte, n uint64) error {
	it := db.NewIterator(prefix, nil)
	defer it.Release()
	for it.Next() {
		k := it.Key()
		if len(k) < len(prefix)+common.AddressLength+8 {
			continue
		}
		if ^binary.BigEndian.Uint64(k[len(k)-8:]) > n {
			if err := batch.Delete(common.CopyBytes(k)); err != nil {
				return err
			}
		}
	}
	return it.Error()
}
