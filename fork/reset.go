package fork

import (
	"context"
	"errors"
	"fmt"

	"github.com/ethereum/go-ethereum/ethdb"

	"github.com/preconf/preconf/remote"
)

// Reset forks again, in place: everything local is dropped (local blocks,
// their history, what was fetched) and the chain starts over at block
// (nil: the upstream's head) of url ("": the same upstream), as anvil_reset
// with forking parameters does. The upstream must be the same chain (its
// chain id): the chain's config, which the sequencer, the pool and the API
// hold, is kept. It needs the upstream to answer.
//
// The caller is the sequencer goroutine (a command run through its do):
// nothing may build on the old head meanwhile, and afterwards the open
// block, the pool and the sequencer's log belong to a chain that is gone,
// so they must be dropped and the next block opened on the new head.
// Readers still holding the old head's state may see it half gone; they
// see the new fork from their next request.
func (c *Chain) Reset(ctx context.Context, url string, block *uint64) error {
	old := c.gen.Load()
	if url == "" {
		url = c.cfg.URL
	}
	client := remote.NewClientWith(url, c.cfg.Client)
	id, err := chainID(ctx, client)
	if err != nil {
		return fmt.Errorf("cannot fork %s: %w", url, err)
	}
	if id != old.meta.UpstreamChainID {
		return fmt.Errorf("%w: forking chain %d again needs the same chain, %s is chain %d (restart with --fork-url and another --datadir)",
			ErrForkMismatch, old.meta.UpstreamChainID, url, id)
	}
	if err := purge(c.db); err != nil {
		return fmt.Errorf("reset: %w", err)
	}
	for _, purge := range []func(){c.headers.Purge, c.blocks.Purge, c.receipts.Purge, c.roots.Purge, c.states.Purge, c.absent.Purge} {
		purge()
	}
	cfg := c.cfg
	cfg.URL, cfg.Block = url, block
	if err := c.createWith(ctx, cfg, old.config); err != nil {
		return err
	}
	c.cfg.URL, c.cfg.Block = url, block
	return nil
}

// purge deletes every key of the store.
func purge(db ethdb.KeyValueRangeDeleter) error {
	for {
		err := db.DeleteRange(nil, nil)
		if !errors.Is(err, ethdb.ErrTooManyKeys) {
			return err
		}
	}
}
