package fork

import (
	"context"
	"errors"
	"fmt"
	"math/big"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/rawdb"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/params"
	"github.com/holiman/uint256"

	"github.com/preconf/preconf/remote"
)

// create forks the upstream into an empty store: the fork block (header and
// body), its ancestors' headers, the upstream's genesis header, the chain
// rules and the fork's identity.
func (c *Chain) create(ctx context.Context) error { return c.createWith(ctx, c.cfg, nil) }

// createWith forks cfg.URL at cfg.Block; keep, when set, is the chain config
// to run by (Reset keeps the one in use).
func (c *Chain) createWith(ctx context.Context, cfg Config, keep *params.ChainConfig) error {
	client := remote.NewClientWith(cfg.URL, cfg.Client)
	upstreamID, err := chainID(ctx, client)
	if err != nil {
		return fmt.Errorf("cannot fork %s: %w", cfg.URL, err)
	}
	tag := "latest"
	if cfg.Block != nil {
		tag = remote.Tag(*cfg.Block)
	}
	head, err := client.HeadByNumber(ctx, tag)
	if err != nil {
		return fmt.Errorf("cannot fork %s: fork block: %w", cfg.URL, err)
	}
	if head == nil {
		return fmt.Errorf("cannot fork %s: it has no block %d yet", cfg.URL, *cfg.Block)
	}
	point := head.Header
	block, err := client.Block(ctx, point.Hash())
	if err != nil || block == nil {
		return fmt.Errorf("cannot fork %s: fork block %d: %v", cfg.URL, point.Number, err)
	}
	config, rules := keep, ""
	if keep == nil {
		if config, rules, err = resolveRules(ctx, client, upstreamID, block, &cfg); err != nil {
			return fmt.Errorf("cannot fork %s: %w", cfg.URL, err)
		}
	} else {
		rules = c.gen.Load().meta.Rules
	}
	parents, err := fetchAncestors(ctx, client, point)
	if err != nil {
		return fmt.Errorf("cannot fork %s: %w", cfg.URL, err)
	}
	genesis := point
	if len(parents) > 0 {
		genesis = parents[len(parents)-1]
	}
	if genesis.Number.Sign() != 0 {
		g, err := client.HeadByNumber(ctx, remote.Tag(0))
		if err != nil || g == nil {
			return fmt.Errorf("cannot fork %s: genesis header: %v", cfg.URL, err)
		}
		genesis = g.Header
	}
	m := &meta{
		UpstreamChainID: upstreamID, Number: point.Number.Uint64(), Hash: point.Hash(),
		Genesis: genesis.Hash(), Rules: rules, Config: config,
	}
	batch := c.db.NewBatch()
	for _, h := range append(parents, genesis) {
		rawdb.WriteHeader(batch, h)
		rawdb.WriteCanonicalHash(batch, h.Hash(), h.Number.Uint64())
	}
	rawdb.WriteBlock(batch, block)
	rawdb.WriteTxLookupEntriesByBlock(batch, block)
	rawdb.WriteCanonicalHash(batch, point.Hash(), point.Number.Uint64())
	rawdb.WriteHeadHeaderHash(batch, point.Hash())
	rawdb.WriteHeadBlockHash(batch, point.Hash())
	if err := writeMeta(batch, m); err != nil {
		return err
	}
	if err := batch.Write(); err != nil {
		return fmt.Errorf("write fork block: %w", err)
	}
	if err := c.sync(); err != nil {
		return err
	}
	g, err := c.newGeneration(m, client, point, genesis)
	if err != nil {
		return err
	}
	if err := c.fund(g, cfg.Fund); err != nil {
		return fmt.Errorf("cannot fork %s: %w", cfg.URL, err)
	}
	c.start(g, point, nil)
	c.log.Info("forked", "upstream", cfg.URL, "upstreamChainId", upstreamID, "block", point.Number, "hash", point.Hash(),
		"chainId", config.ChainID, "rules", rules)
	return nil
}

// fund sets the balances of accounts at the fork block: entries of the
// local history at the fork block's number (which no sealed block writes),
// over the accounts as the upstream has them.
func (c *Chain) fund(g *generation, balances map[common.Address]*big.Int) error {
	if len(balances) == 0 {
		return nil
	}
	addrs := make([]common.Address, 0, len(balances))
	for a := range balances {
		addrs = append(addrs, a)
	}
	if err := g.base.Prefetch(addrs); err != nil {
		return fmt.Errorf("accounts to fund: %w", err)
	}
	n := g.point.Number.Uint64()
	batch := c.db.NewBatch()
	for _, a := range addrs {
		acct, err := g.base.Account(a)
		if err != nil {
			return fmt.Errorf("account %s to fund: %w", a, err)
		}
		if acct == nil {
			acct = types.NewEmptyStateAccount()
		}
		bal, overflow := uint256.FromBig(balances[a])
		if overflow {
			return fmt.Errorf("balance of %s out of range", a)
		}
		acct.Balance = bal
		batch.Put(key(accountPrefix, a[:], inverted(n)), encodeAccount(acct))
	}
	if err := batch.Write(); err != nil {
		return err
	}
	for _, a := range addrs {
		g.touched.accounts.Store(a, struct{}{})
	}
	return c.sync()
}

// resume opens a fork created before: the datadir says which block and
// rules; the upstream, when it answers, must still have that block.
func (c *Chain) resume(ctx context.Context, m *meta) error {
	if err := m.check(&c.cfg); err != nil {
		return err
	}
	point := rawdb.ReadHeader(c.db, m.Hash, m.Number)
	genesis := rawdb.ReadHeader(c.db, m.Genesis, 0)
	headHash := rawdb.ReadHeadBlockHash(c.db)
	var head *types.Header
	if n, ok := rawdb.ReadHeaderNumber(c.db, headHash); ok {
		head = rawdb.ReadHeader(c.db, headHash, n)
	}
	if point == nil || genesis == nil || head == nil {
		return errors.New("the fork in the datadir is incomplete (its fork block, genesis or head is missing)")
	}
	client := remote.NewClientWith(c.cfg.URL, c.cfg.Client)
	if err := checkUpstream(ctx, client, m); err != nil {
		if !errors.Is(err, remote.ErrUnavailable) {
			return err
		}
		c.log.Warn("upstream unavailable: serving what the datadir holds, the rest fails until it answers", "upstream", c.cfg.URL, "err", err)
	}
	g, err := c.newGeneration(m, client, point, genesis)
	if err != nil {
		return err
	}
	var finalized *types.Header
	if h := rawdb.ReadFinalizedBlockHash(c.db); h != ([32]byte{}) {
		if n, ok := rawdb.ReadHeaderNumber(c.db, h); ok {
			finalized = rawdb.ReadHeader(c.db, h, n)
		}
	}
	c.start(g, head, finalized)
	c.log.Info("resumed fork", "upstream", c.cfg.URL, "upstreamChainId", m.UpstreamChainID, "block", m.Number, "hash", m.Hash,
		"head", head.Number, "chainId", m.Config.ChainID, "rules", m.Rules)
	return nil
}

// checkUpstream refuses an upstream that is not the chain the datadir
// forked (another chain, or one that reorganised the fork block away).
func checkUpstream(ctx context.Context, client *remote.Client, m *meta) error {
	ctx, cancel := context.WithTimeout(ctx, fetchTimeout)
	defer cancel()
	id, err := chainID(ctx, client)
	if err != nil {
		return err
	}
	if id != m.UpstreamChainID {
		return fmt.Errorf("%w: it forked chain %d, the upstream is chain %d (use another --datadir)", ErrForkMismatch, m.UpstreamChainID, id)
	}
	h, err := client.HeadByNumber(ctx, remote.Tag(m.Number))
	if err != nil {
		return err
	}
	if h == nil || h.Header.Hash() != m.Hash {
		return fmt.Errorf("%w: it forked block %d (%s), which the upstream does not have (another chain or a reorg; use another --datadir)", ErrForkMismatch, m.Number, m.Hash)
	}
	return nil
}

// start makes g the chain's fork, head its newest block.
func (c *Chain) start(g *generation, head, finalized *types.Header) {
	if finalized == nil {
		finalized = g.point
	}
	c.gen.Store(g)
	c.head.Store(head)
	c.safe.Store(finalized)
	c.finalized.Store(finalized)
	c.prefetchAhead(g, head)
}

// sync makes every write so far durable.
func (c *Chain) sync() error {
	if err := c.db.SyncKeyValue(); err != nil {
		return fmt.Errorf("sync database: %w", err)
	}
	return nil
}
