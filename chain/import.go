package chain

import (
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/ethereum/go-ethereum/core/rawdb"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/rlp"
)

// importBatch bounds how many decoded blocks are held before insertion.
const importBatch = 1024

// ImportResult counts what an import did.
type ImportResult struct {
	Imported, Skipped int
}

// ImportFile imports RLP-encoded blocks from path (see Import).
func (c *Chain) ImportFile(path string) (ImportResult, error) {
	f, err := os.Open(path)
	if err != nil {
		return ImportResult{}, fmt.Errorf("import: %w", err)
	}
	defer f.Close()
	res, err := c.Import(f)
	if err != nil {
		return res, fmt.Errorf("import %s: %w", path, err)
	}
	return res, nil
}

// Import reads a stream of RLP-encoded blocks (the `geth export` format) and
// inserts them. Blocks already in the chain are skipped, so importing the
// same file twice is harmless. Afterwards the head is marked safe and
// finalized: imported history is settled by definition.
func (c *Chain) Import(r io.Reader) (ImportResult, error) {
	var (
		res    ImportResult
		stream = rlp.NewStream(r, 0)
		batch  = make([]*types.Block, 0, importBatch)
		start  = time.Now()
	)
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		if n, err := c.bc.InsertChain(batch); err != nil {
			return fmt.Errorf("block %d: %w", batch[n].NumberU64(), err)
		}
		for _, b := range batch {
			// Index now rather than waiting for the background indexer, so
			// transaction lookups work the moment the node serves.
			rawdb.WriteTxLookupEntriesByBlock(c.db, b)
		}
		res.Imported += len(batch)
		c.log.Info("imported blocks", "count", res.Imported, "skipped", res.Skipped,
			"number", batch[len(batch)-1].NumberU64(), "elapsed", time.Since(start).Round(time.Millisecond))
		batch = batch[:0]
		return nil
	}
	for n := 0; ; n++ {
		b := new(types.Block)
		if err := stream.Decode(b); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return res, fmt.Errorf("decode block at position %d: %w", n, err)
		}
		if b.NumberU64() == 0 {
			return res, fmt.Errorf("block at position %d is a genesis block; the file must start at block 1", n)
		}
		if c.bc.HasBlock(b.Hash(), b.NumberU64()) {
			res.Skipped++
			continue
		}
		batch = append(batch, b)
		if len(batch) == importBatch {
			if err := flush(); err != nil {
				return res, err
			}
		}
	}
	if err := flush(); err != nil {
		return res, err
	}
	if res.Imported > 0 {
		head := c.Head()
		c.SetSafe(head)
		c.SetFinalized(head)
	}
	return res, nil
}
