package node

import (
	"context"
	"math/big"
	"path/filepath"

	"github.com/preconf/preconf/anvil"
	"github.com/preconf/preconf/api"
	"github.com/preconf/preconf/seqapi"
	"github.com/preconf/preconf/sequencer"
)

// buildLocal opens the chain, imports blocks, registers the methods and
// starts the sequencer, if any (New).
func (n *Node) buildLocal() error {
	backend, err := n.openChain()
	if err != nil {
		return err
	}
	if n.RPC, err = n.newRPC(n.rpcMetrics); err != nil {
		return err
	}
	seq, err := n.newSequencer()
	if err != nil {
		return err
	}
	acfg := n.apiConfig()
	if seq != nil {
		acfg.PoolNonces = seq.Pool()
	}
	methods, err := api.New(backend, acfg)
	if err != nil {
		return err
	}
	methods.Register(n.RPC)
	if err := n.startWallet(n.below.Config().ChainID); err != nil {
		return err
	}
	n.startSubscriptions(n.below.Config(), n.events, n.RPC)
	n.startStreams()
	if err := n.startSequencer(seq, methods); err != nil {
		return err
	}
	if err := n.checkAPIs(); err != nil {
		return err
	}
	n.watchSnapshots()
	return nil
}

// newSequencer makes the sequencer when Sequencer is set (nil otherwise);
// startSequencer starts it.
func (n *Node) newSequencer() (*sequencer.Sequencer, error) {
	if n.cfg.Sequencer == nil {
		return nil, nil
	}
	scfg := *n.cfg.Sequencer
	scfg.Logger, scfg.Fork = n.log, n.Fork != nil
	if n.cfg.DataDir != "" {
		scfg.WALPath = filepath.Join(n.cfg.DataDir, "sequencer", "flashblocks.wal")
	}
	return sequencer.New(scfg, n.below, n.Pending)
}

// startSequencer starts block production with seq (after WAL recovery, so
// the pending state is complete before anyone can read it); without one,
// transaction intake answers that this node does not sequence. reads gives
// the intake methods eth_getTransactionReceipt's receipts and
// eth_estimateGas's estimates.
func (n *Node) startSequencer(seq *sequencer.Sequencer, reads *api.API) error {
	if seq == nil {
		seqapi.RegisterDisabled(n.RPC)
		anvil.RegisterDisabled(n.RPC)
		return nil
	}
	if err := seq.Start(); err != nil {
		return err
	}
	n.Sequencer = seq
	n.OnClose(seq.Stop)
	if n.Fork != nil { // runs before seq.Stop: a block waiting for the upstream gives up
		n.OnClose(n.Fork.StopWaiting)
	}
	seqapi.Register(n.RPC, seq, reads, reads)
	anvil.Register(n.RPC, seq, anvil.Options{Version: api.Version, Fork: n.Fork,
		GasPrice: func(context.Context) (*big.Int, error) { return reads.GasPrice(), nil }})
	return nil
}
